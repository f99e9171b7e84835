import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { unhandledRejections } from '../../../../test/support/unhandled.js'
import { createLimiter } from '../limiter/limiter.js'
import { MemoryStore } from '../stores/memory-store.js'
import { ConfigError } from './errors.js'
import { containObserve, type ObserveEvent } from './observe.js'

describe('observe on createLimiter', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let warn: { mock: { calls: unknown[][] }; mockRestore(): void }
  beforeEach(() => {
    watch()
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(async () => {
    await new Promise((resolve) => setTimeout(resolve, 5))
    unwatch()
    warn.mockRestore()
    expect(unhandled).toEqual([])
  })

  it('reports consumes (not peeks) with key, cost and decision, synchronously on a memory store', async () => {
    const events: ObserveEvent[] = []
    const limiter = createLimiter({ limits: '3/min', store: new MemoryStore(), observe: (e) => void events.push(e) })
    await limiter.consume('a', { cost: 2 })
    await limiter.peek('a')
    await limiter.consume('a', { cost: 2 })
    expect(
      events.map((e) => e.type === 'decision' && [e.key, e.cost, e.decision.allowed, e.decision.remaining]),
    ).toEqual([
      ['a', 2, true, 1],
      ['a', 2, false, 1],
    ])
  })

  it('reports a store error with the key, then the decision onStoreError made', async () => {
    const events: ObserveEvent[] = []
    const error = new Error('down')
    const limiter = createLimiter({
      limits: '3/min',
      store: { consume: () => Promise.reject(error), peek: () => Promise.reject(error), reset: async () => {} },
      onStoreError: 'deny',
      observe: (e) => void events.push(e),
    })
    await limiter.consume('a')
    expect(events).toEqual([
      { type: 'store-error', key: 'a', error },
      expect.objectContaining({ type: 'decision', key: 'a', decision: expect.objectContaining({ source: 'error' }) }),
    ])
  })

  it('contains an observe that throws or rejects, reporting only the first', async () => {
    let calls = 0
    const limiter = createLimiter({
      limits: '3/min',
      observe: () => {
        calls++
        if (calls === 1) return Promise.reject(new Error('async oops'))
        throw new Error('sync oops')
      },
    })
    for (let i = 0; i < 4; i++) await limiter.consume('a')
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect((await limiter.consume('a')).allowed).toBe(false)
    expect(calls).toBe(5)
    expect(warn.mock.calls).toHaveLength(1)
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/SLUICE_OBSERVE_THREW.*async oops/)
  })

  it('must be a function', () => {
    expect(() => createLimiter({ limits: '1/s', observe: 'log' as never })).toThrow(ConfigError)
    expect(containObserve(undefined)).toBeUndefined()
  })
})
