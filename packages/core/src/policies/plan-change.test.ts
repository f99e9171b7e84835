import { describe, expect, it } from 'vitest'
import { type AlgorithmState, step } from '../algorithms/index.js'
import { createLimiter } from '../limiter/limiter.js'
import { MemoryStore } from '../stores/memory-store.js'
import { ALGORITHMS, type AlgorithmName, parsePolicy } from './policy.js'

const DAY = 86_400_000
const start = 20_000 * DAY + 1000 // just after a day's start, so a fixed window has the whole day left

function plans(algorithm: AlgorithmName) {
  return {
    free: { name: 'plan', limit: 100, window: '1d', algorithm } as const,
    pro: { name: 'plan', limit: 1000, window: '1d', algorithm } as const,
  }
}

// sliding-log keeps at most 10 000 entries; 1000 of them are enough for a pro plan.
describe.each(ALGORITHMS)('%s: a named policy keeps its usage across a limit change', (algorithm) => {
  const { free, pro } = plans(algorithm)

  it('an upgrade after 100 of 100 used leaves 900 of the new 1000', async () => {
    const now = start
    const store = new MemoryStore({ now: () => now })
    const freeLimiter = createLimiter({ limits: free, store })
    const proLimiter = createLimiter({ limits: pro, store })
    expect((await freeLimiter.consume('user', { cost: 100 })).allowed).toBe(true)
    expect((await freeLimiter.peek('user')).allowed).toBe(false)
    expect((await proLimiter.peek('user')).remaining).toBe(900)
    expect((await proLimiter.consume('user', { cost: 900 })).allowed).toBe(true)
    expect((await proLimiter.consume('user')).allowed).toBe(false)
  })

  it('a downgrade after 1000 used leaves nothing until the usage has drained', async () => {
    let now = start
    const store = new MemoryStore({ now: () => now })
    const proLimiter = createLimiter({ limits: pro, store })
    const freeLimiter = createLimiter({ limits: free, store })
    expect((await proLimiter.consume('user', { cost: 1000 })).allowed).toBe(true)
    const after = await freeLimiter.consume('user')
    expect(after).toMatchObject({ allowed: false, remaining: 0 })
    // Windows and logs forget the usage when the period has turned (a sliding window's two
    // windows after it); a bucket or GCRA has refilled the plan's 100 within a day at 100/day.
    now = start + 2 * DAY
    expect((await freeLimiter.peek('user')).remaining).toBe(100)
  })

  it('an upgrade and back again does not reset the usage (cycling plans)', async () => {
    const now = start
    const store = new MemoryStore({ now: () => now })
    const freeLimiter = createLimiter({ limits: free, store })
    const proLimiter = createLimiter({ limits: pro, store })
    await freeLimiter.consume('user', { cost: 60 })
    await proLimiter.consume('user', { cost: 30 })
    expect((await freeLimiter.peek('user')).remaining).toBe(10)
  })

  it('the pure transitions (what the Durable Object runs) read the usage against the new limit too', () => {
    const freePolicy = parsePolicy(free)
    const proPolicy = parsePolicy(pro)
    expect(freePolicy.id).toBe(proPolicy.id)
    const state: AlgorithmState = step(undefined, start, freePolicy, 100).state
    expect(step(state, start, proPolicy, 0).outcome.remaining).toBe(900)
  })
})

describe('policies without a name keep their identity by limit', () => {
  it('a new limit starts with fresh usage, as before', async () => {
    const store = new MemoryStore({ now: () => start })
    const small = createLimiter({ limits: { limit: 100, window: '1d' }, store })
    const large = createLimiter({ limits: { limit: 1000, window: '1d' }, store })
    await small.consume('user', { cost: 100 })
    expect((await large.peek('user')).remaining).toBe(1000)
  })

  it('named policies with another window or algorithm keep their own state', () => {
    const daily = parsePolicy({ name: 'plan', limit: 100, window: '1d' })
    expect(parsePolicy({ name: 'plan', limit: 100, window: '1h' }).id).not.toBe(daily.id)
    expect(parsePolicy({ name: 'plan', limit: 100, window: '1d', algorithm: 'gcra' }).id).not.toBe(daily.id)
    expect(parsePolicy({ name: 'other', limit: 100, window: '1d' }).id).not.toBe(daily.id)
    expect(parsePolicy({ limit: 100, window: '1d' }).id).not.toBe(daily.id)
  })
})

describe('a store that cannot keep a named policy across a limit change', () => {
  it('is refused at createLimiter with a ConfigError naming the policy, never reset at a plan change', () => {
    const memory = new MemoryStore()
    const store = {
      namedAlgorithms: ['gcra'] as const,
      consume: memory.consume.bind(memory),
      peek: memory.peek.bind(memory),
      reset: memory.reset.bind(memory),
    }
    expect(() =>
      createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm: 'gcra' }, store }),
    ).not.toThrow()
    expect(() =>
      createLimiter({ limits: { limit: 100, window: '1d', algorithm: 'fixed-window' }, store }),
    ).not.toThrow()
    expect(() =>
      createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm: 'fixed-window' }, store }),
    ).toThrow(
      expect.objectContaining({
        field: 'limits[0].name',
        value: 'plan',
        message: expect.stringMatching(/keeps named gcra/),
      }),
    )
  })
})
