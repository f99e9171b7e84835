import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

const T = Date.parse('2026-11-30T23:00:00Z')

/** Issue 40, item 7: usage for a key and policy, read without consuming. */
describe('limiter.usage', () => {
  it('reports used, limit, remaining and resetAfter per policy, and consumes nothing', async () => {
    const now = T
    const store = new MemoryStore({ now: () => now })
    const limiter = createLimiter({
      limits: [
        { limit: 10, window: '1m', algorithm: 'fixed-window', name: 'minute' },
        { limit: 100, window: '1h', name: 'hour' },
      ],
      store,
    })
    expect(await limiter.usage('k')).toEqual([
      { name: 'minute', limit: 10, used: 0, remaining: 10, resetAfter: 0 },
      { name: 'hour', limit: 100, used: 0, remaining: 100, resetAfter: 0 },
    ])
    await limiter.consume('k', { cost: 3 })
    const usage = await limiter.usage('k')
    expect(usage.map(({ name, used, remaining }) => ({ name, used, remaining }))).toEqual([
      { name: 'minute', used: 3, remaining: 7 },
      { name: 'hour', used: 3, remaining: 97 },
    ])
    expect(usage[0]?.resetAfter).toBe(60_000) // the fixed window turns at the whole minute
    expect(await limiter.usage('k')).toEqual(usage)
    expect((await limiter.peek('k')).remaining).toBe(7)
  })

  it('shows an over-spent settle beyond the limit, where remaining stops at 0', async () => {
    const store = new MemoryStore({ now: () => T })
    const limiter = createLimiter({ limits: { limit: 1000, period: 'month' }, store })
    const admittedAt = limiter.clock()
    await limiter.consume('k', { cost: 900 })
    await limiter.settle('k', { reserved: 900, actual: 1250, admittedAt })
    expect(await limiter.usage('k')).toEqual([
      { name: '1000-per-month', limit: 1000, used: 1250, remaining: 0, resetAfter: 3_600_000 },
    ])
    await limiter.penalty('k', { cost: 5 })
    expect((await limiter.usage('k'))[0]?.used).toBe(1255)
  })

  it('reads the count a named policy shares across plans against each plan', async () => {
    const store = new MemoryStore({ now: () => T })
    const free = createLimiter({ limits: { limit: 10, window: '1h', name: 'plan' }, store })
    const pro = createLimiter({ limits: { limit: 100, window: '1h', name: 'plan' }, store })
    await free.consume('k', { cost: 10 })
    expect((await free.usage('k'))[0]).toMatchObject({ limit: 10, used: 10, remaining: 0 })
    expect((await pro.usage('k'))[0]).toMatchObject({ limit: 100, used: 10, remaining: 90 })
  })

  it('a token bucket and GCRA report what is missing from a full bucket; a sliding log, limit less remaining', async () => {
    let now = T
    const store = new MemoryStore({ now: () => now })
    const bucket = createLimiter({ limits: { limit: 10, window: '10s', algorithm: 'token-bucket', burst: 5 }, store })
    const gcra = createLimiter({ limits: { limit: 10, window: '10s', algorithm: 'gcra', burst: 5 }, store })
    const log = createLimiter({ limits: { limit: 4, window: '1m', algorithm: 'sliding-log' }, store })
    for (const limiter of [bucket, gcra]) {
      await limiter.consume('k', { cost: 3 })
      expect((await limiter.usage('k'))[0]).toMatchObject({ limit: 10, used: 3, remaining: 2 })
    }
    await log.consume('k', { cost: 3 })
    expect((await log.usage('k'))[0]).toMatchObject({ limit: 4, used: 3, remaining: 1 })
    now += 1000 // one token back at 1/s
    expect((await bucket.usage('k'))[0]).toMatchObject({ used: 2, remaining: 3 })
  })

  it('a sliding window reports its weighted count, rounded up', async () => {
    let now = T
    const limiter = createLimiter({
      limits: { limit: 10, window: '10s', precision: 1 },
      store: new MemoryStore({ now: () => now }),
    })
    await limiter.consume('k', { cost: 4 })
    now += 15_000 // half of the previous window still weighs: 4 × 0.5 = 2
    expect((await limiter.usage('k'))[0]).toMatchObject({ used: 2, remaining: 8 })
    now += 1 // a hair under half: 1.9996 rounds up to 2
    expect((await limiter.usage('k'))[0]?.used).toBe(2)
  })

  it('rejects a key that is not a string, as peek does', async () => {
    await expect(createLimiter({ limits: '1/s' }).usage(42 as never)).rejects.toThrow(/key/)
  })
})
