import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { ALGORITHMS } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

const start = 1_000_000_000 // a multiple of the 100 s window
const SECOND = 1000

describe.each(ALGORITHMS)('%s: settle after the work', (algorithm) => {
  const limits = { limit: 100, window: 100 * SECOND, algorithm }

  it('gives back what the work did not use', async () => {
    const limiter = createLimiter({ limits, store: new MemoryStore({ now: () => start }) })
    await limiter.consume('key', { cost: 10 })
    const admittedAt = limiter.clock()
    expect((await limiter.settle('key', { reserved: 10, actual: 4, admittedAt })).remaining).toBe(96)
  })

  it('changes nothing when the estimate was right', async () => {
    const limiter = createLimiter({ limits, store: new MemoryStore({ now: () => start }) })
    await limiter.consume('key', { cost: 10 })
    expect((await limiter.settle('key', { reserved: 10, actual: 10 })).remaining).toBe(90)
  })

  it('charges an over-spend below zero, so the next requests wait', async () => {
    let now = start
    const limiter = createLimiter({ limits, store: new MemoryStore({ now: () => now }) })
    await limiter.consume('key', { cost: 10 })
    const after = await limiter.settle('key', { reserved: 10, actual: 150 })
    expect(after).toMatchObject({ allowed: false, remaining: 0 })
    expect((await limiter.consume('key')).allowed).toBe(false)
    // 150 used of 100: a window forgets it when it has passed (the sliding window's weight a
    // window later); a bucket or GCRA owes 50 units at 1/s and admits one after 51 s.
    if (algorithm === 'token-bucket' || algorithm === 'gcra') {
      expect(after.retryAfter).toBe(51 * SECOND)
      now = start + 50 * SECOND
      expect((await limiter.consume('key')).allowed).toBe(false)
      now = start + 51 * SECOND
    } else {
      expect(after.retryAfter).toBeGreaterThan(0)
      now = start + (algorithm === 'sliding-window' ? 200 : 100) * SECOND
    }
    expect((await limiter.consume('key')).allowed).toBe(true)
  })
})

describe('settle keeps to the window the request was admitted in', () => {
  it('a late give-back leaves the next fixed window alone', async () => {
    let now = start
    const limiter = createLimiter({
      limits: { limit: 100, window: 100 * SECOND, algorithm: 'fixed-window' },
      store: new MemoryStore({ now: () => now }),
    })
    await limiter.consume('key', { cost: 50 })
    const admittedAt = limiter.clock()
    now = start + 100 * SECOND
    await limiter.consume('key', { cost: 30 })
    expect((await limiter.settle('key', { reserved: 50, actual: 0, admittedAt })).remaining).toBe(70)
  })
})

describe('settle rejects bad input with a ConfigError naming the field', () => {
  const limiter = createLimiter({ limits: '100/min' })
  it.each([
    [{ reserved: 0, actual: 1 }, 'reserved'],
    [{ reserved: 101, actual: 1 }, 'reserved'],
    [{ reserved: 1.5, actual: 1 }, 'reserved'],
    [{ reserved: 1, actual: -1 }, 'actual'],
    [{ reserved: 1, actual: Number.NaN }, 'actual'],
    [{ reserved: 1, actual: 1, admittedAt: 'yesterday' }, 'admittedAt'],
  ])('%o → %s', async (options, field) => {
    const error = await limiter.settle('key', options as never).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).field).toBe(field)
  })
})
