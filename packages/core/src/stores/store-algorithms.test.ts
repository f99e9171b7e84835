import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import type { Store } from './contract.js'
import { FilteredStore } from './filtered-store.js'
import { MemoryStore } from './memory-store.js'
import { SketchStore } from './sketch-store.js'

describe('a store that names the algorithms it serves', () => {
  it('gets a ConfigError at createLimiter naming the field, the algorithm and the policy', () => {
    const error = (() => {
      try {
        createLimiter({
          limits: ['10/s', { limit: 5, window: 1000, algorithm: 'sliding-log', name: 'burst' }],
          store: new SketchStore(),
        })
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect(error).toMatchObject({ field: 'limits[1].algorithm', value: 'sliding-log' })
    expect((error as Error).message).toMatch(/SketchStore.*fixed-window, sliding-window.*"burst"/)
  })

  it('accepts the algorithms it serves; a store without the field serves all', async () => {
    const sketch = createLimiter({
      limits: { limit: 2, window: 1000, algorithm: 'fixed-window' },
      store: new SketchStore(),
    })
    expect((await sketch.consume('a')).allowed).toBe(true)
    expect(() => createLimiter({ limits: { limit: 2, window: 1000, algorithm: 'sliding-log' } })).not.toThrow()
  })

  it('FilteredStore serves what both its sketch and its exact store serve', () => {
    const onlyFixed: Store = Object.assign(new MemoryStore(), { algorithms: ['fixed-window'] as const })
    const filtered = new FilteredStore({ store: onlyFixed, threshold: 1 })
    expect(filtered.algorithms).toEqual(['fixed-window'])
    expect(new FilteredStore({ store: new MemoryStore(), threshold: 1 }).algorithms).toEqual([
      'fixed-window',
      'sliding-window',
    ])
    expect(() => createLimiter({ limits: '10/s', store: filtered })).toThrow(/limits\[0\]\.algorithm/)
    expect(() => createLimiter({ limits: { limit: 10, window: 1000, algorithm: 'gcra' }, store: filtered })).toThrow(
      ConfigError,
    )
  })
})
