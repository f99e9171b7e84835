import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { createLimiter, MemoryStore } from '@sluice/core'
import { describe, expect, it } from 'vitest'

// A forced GC makes the heap figure the store's, not garbage not yet collected (vitest's workers
// do not start with --expose-gc; the flag takes effect for a new context).
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('a flood of new keys against MemoryStore', () => {
  it('1M new keys: the store stays within maxKeys and a limited key stays limited', async () => {
    const maxKeys = 50_000
    const store = new MemoryStore({ maxKeys })
    const limiter = createLimiter({ limits: '5/min', store })
    const consume = (key: string) => limiter.consume(key)
    for (let i = 0; i < 6; i++) await consume('attacker')
    gc()
    const heapBefore = process.memoryUsage().heapUsed
    let largest = 0
    for (let i = 0; i < 1_000_000; i++) {
      await consume(`flood-${i}`)
      if (i % 50_000 === 0) {
        largest = Math.max(largest, store.size)
        const attacker = await consume('attacker')
        expect(attacker).toMatchObject({ allowed: false, source: 'store' })
      }
    }
    largest = Math.max(largest, store.size)
    expect(largest).toBeLessThanOrEqual(maxKeys)
    expect(await consume('attacker')).toMatchObject({ allowed: false, source: 'store', remaining: 0 })
    // 50 000 keys at well under 1 KiB each stay below 100 MiB; 1M keys kept would take hundreds.
    gc()
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(100 * 1024 * 1024)
  }, 60_000)
})
