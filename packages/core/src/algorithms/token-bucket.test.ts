import { describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter/limiter.js'
import { parsePolicy } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import {
  penalizeTokenBucket,
  refundTokenBucket,
  storedTokens,
  type TokenBucketState,
  tokenBucket,
  tokenBucketMeter,
} from './token-bucket.js'

// A named plan of 10/s with a burst of 10, and a slower plan of 1/s with the same burst.
const fast = { name: 'plan', limit: 10, window: 1000, algorithm: 'token-bucket', burst: 10 } as const
const slow = { ...fast, limit: 1 } as const
const fastPolicy = parsePolicy(fast)
const slowPolicy = parsePolicy(slow)
const T0 = 1_000_000

/** The state after the whole burst of 10 was used on the fast plan at T0. */
function emptiedOnFastPlan(): TokenBucketState {
  const { state, outcome } = tokenBucket(undefined, T0, fastPolicy, 10)
  expect(outcome).toMatchObject({ allowed: true, remaining: 0 })
  return state
}

describe('a named token bucket refills at the rate it was written at until a request under another plan', () => {
  it('records the rate with the burst', () => {
    expect(emptiedOnFastPlan()).toEqual({ tokens: 0, updated: T0, burst: 10, limit: 10 })
  })

  it('reads full on a slower plan once the old plan has refilled it (2.5 s after emptying 10 at 10/s)', () => {
    const state = emptiedOnFastPlan()
    // Refilling from T0 at the new 1/s would leave 2; the old plan had refilled all 10 by T0 + 1 s.
    expect(tokenBucket(state, T0 + 2500, slowPolicy, 0).outcome.remaining).toBe(10)
    expect(storedTokens(state, T0 + 2500, slowPolicy)).toBe(10 * 1000)
  })

  it('within the first second: the old rate refills until the switch, the new rate from then on', () => {
    const emptied = emptiedOnFastPlan()
    // 500 ms at 10/s is 5 tokens; the request under the slow plan takes one and writes its rate.
    const switched = tokenBucket(emptied, T0 + 500, slowPolicy, 1)
    expect(switched.outcome).toMatchObject({ allowed: true, remaining: 4 })
    expect(switched.state).toEqual({ tokens: 4000, updated: T0 + 500, burst: 10, limit: 1 })
    // A second more at 1/s is one token, not ten.
    expect(tokenBucket(switched.state, T0 + 1500, slowPolicy, 0).outcome.remaining).toBe(5)
    expect(tokenBucket(switched.state, T0 + 1500, fastPolicy, 0).outcome.remaining).toBe(5)
  })

  it('converts to a smaller burst after the old rate’s refill: the units used stay used', () => {
    const emptied = emptiedOnFastPlan()
    // 5 of 10 back at 10/s by T0 + 500, so 5 used: a burst of 2 has none left, and no debt.
    const smaller = parsePolicy({ ...slow, burst: 2 })
    expect(storedTokens(emptied, T0 + 500, smaller)).toBe(0)
    expect(tokenBucket(emptied, T0 + 500, smaller, 1).outcome).toMatchObject({ allowed: false, retryAfter: 1000 })
    // Full by the old plan at T0 + 1 s: full on the smaller burst too.
    expect(storedTokens(emptied, T0 + 1000, smaller)).toBe(2000)
  })

  it('a refund and a penalty refill at the stored rate and write the new one', () => {
    const emptied = emptiedOnFastPlan()
    expect(refundTokenBucket(emptied, T0 + 500, slowPolicy, 2)).toEqual({
      tokens: 7000,
      updated: T0 + 500,
      burst: 10,
      limit: 1,
    })
    expect(penalizeTokenBucket(emptied, T0 + 500, slowPolicy, 7)).toEqual({
      tokens: -2000,
      updated: T0 + 500,
      burst: 10,
      limit: 1,
    })
  })

  it('the in-place meter (MemoryStore) reads and writes the rate as the transition does', () => {
    const live = tokenBucketMeter.fromState(emptiedOnFastPlan())
    expect(tokenBucketMeter.decide(live, T0 + 2500, slowPolicy, 0).remaining).toBe(10)
    const taken = tokenBucketMeter.take(live, T0 + 500, slowPolicy, 1)
    expect(taken).toMatchObject({ tokens: 4000, updated: T0 + 500, burst: 10, limit: 1 })
  })

  it('a MemoryStore agrees: full 2.5 s later on the slower plan, 4 left after a request at 500 ms', async () => {
    let now = T0
    const store = new MemoryStore({ now: () => now })
    const fastLimiter = createLimiter({ limits: fast, store })
    const slowLimiter = createLimiter({ limits: slow, store })
    expect((await fastLimiter.consume('a', { cost: 10 })).remaining).toBe(0)
    expect((await fastLimiter.consume('b', { cost: 10 })).remaining).toBe(0)
    now = T0 + 500
    expect((await slowLimiter.consume('b')).remaining).toBe(4)
    now = T0 + 1500
    expect((await slowLimiter.peek('b')).remaining).toBe(5)
    now = T0 + 2500
    expect((await slowLimiter.peek('a')).remaining).toBe(10)
  })
})

describe('a token-bucket state written before the rate was kept reads as before: at the policy’s rate', () => {
  it('tokens and updated only (the first layout): refills at the policy’s rate, no conversion', () => {
    const old: TokenBucketState = { tokens: 0, updated: T0 }
    expect(storedTokens(old, T0 + 2500, slowPolicy)).toBe(2500)
    expect(tokenBucket(old, T0 + 2500, slowPolicy, 0).outcome.remaining).toBe(2)
    expect(tokenBucket(old, T0 + 250, fastPolicy, 0).outcome.remaining).toBe(2)
  })

  it('with the burst but no rate: refills at the policy’s rate, then converts from the burst', () => {
    const old: TokenBucketState = { tokens: 0, updated: T0, burst: 5 }
    // 2.5 of 5 back at 1/s, 2.5 used: 7.5 of a burst of 10.
    expect(storedTokens(old, T0 + 2500, slowPolicy)).toBe(7500)
    expect(tokenBucket(old, T0 + 2500, slowPolicy, 0).outcome.remaining).toBe(7)
  })
})
