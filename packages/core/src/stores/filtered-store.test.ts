import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Outcome } from '../algorithms/index.js'
import { createLimiter } from '../limiter/limiter.js'
import { type PolicyInput, parsePolicies } from '../policies/policy.js'
import type { Store } from './contract.js'
import { FilteredStore } from './filtered-store.js'
import { MemoryStore } from './memory-store.js'
import { SketchStore } from './sketch-store.js'

function setup(threshold: number, options: { hashes?: number; slots?: number } = {}) {
  const clock = { t: 0 }
  const now = () => clock.t
  const exact = new MemoryStore({ now })
  const store = new FilteredStore({ store: exact, threshold, sketch: new SketchStore({ ...options, now }) })
  return { clock, exact, store }
}

describe('FilteredStore', () => {
  it('never allocates exact state for keys that stay below the threshold', async () => {
    const { exact, store } = setup(3)
    const limiter = createLimiter({ limits: '10/min', store })
    for (let i = 0; i < 1000; i++) {
      for (let n = 0; n < 3; n++) expect((await limiter.consume(`client:${i}`)).allowed).toBe(true)
    }
    expect(exact.size).toBe(0)
  })

  it('sends a key past the threshold to the exact store, which grants the rest of the limit', async () => {
    const { exact, store } = setup(3)
    const limiter = createLimiter({ limits: { limit: 10, window: '1m', algorithm: 'fixed-window' }, store })
    const remaining: number[] = []
    for (let n = 0; n < 12; n++) {
      const decision = await limiter.consume('hot')
      if (decision.allowed) remaining.push(decision.remaining)
    }
    expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    expect(exact.size).toBe(1)
    expect((await limiter.peek('hot')).allowed).toBe(false)
    await limiter.reset('hot')
    expect((await limiter.consume('hot')).remaining).toBe(9)
  })

  it("a plan change of a named policy reads the usage so far against the new plan's limit", async () => {
    const { store } = setup(3)
    const free = createLimiter({ limits: { limit: 10, window: '1h', name: 'plan', algorithm: 'fixed-window' }, store })
    const pro = createLimiter({ limits: { limit: 100, window: '1h', name: 'plan', algorithm: 'fixed-window' }, store })
    for (let n = 0; n < 10; n++) expect((await free.consume('k')).allowed).toBe(true)
    expect((await free.consume('k')).allowed).toBe(false)
    expect((await pro.consume('k')).remaining).toBe(89)
    expect((await free.peek('k')).remaining).toBe(0)
  })

  it('works with an asynchronous exact store', async () => {
    const exact = new MemoryStore()
    const slow: Store = {
      consume: async (key, set, cost) => exact.consume(key, set, cost),
      peek: async (key, set) => exact.peek(key, set),
      reset: async (key, set) => exact.reset(key, set),
    }
    const limiter = createLimiter({ limits: '4/min', store: new FilteredStore({ store: slow, threshold: 2 }) })
    const allowed = []
    for (let n = 0; n < 6; n++) allowed.push((await limiter.consume('k')).allowed)
    expect(allowed).toEqual([true, true, true, true, false, false])
  })

  const LIMITS: PolicyInput[][] = [
    [{ limit: 6, window: 1000, algorithm: 'fixed-window' }],
    [{ limit: 6, window: 1000, algorithm: 'sliding-window' }],
    [
      { limit: 5, window: 300, algorithm: 'sliding-window', precision: 3 },
      { limit: 12, window: 2000, algorithm: 'fixed-window' },
    ],
  ]

  it.each(LIMITS.map((limits, i) => [i, limits] as const))(
    'never admits what one exact store would deny, nor reports more remaining, whatever the threshold and collisions (limits #%i)',
    (_, limits) => {
      const set = parsePolicies(limits)
      const smallest = Math.min(...set.policies.map((p) => p.limit))
      fc.assert(
        fc.property(
          fc.array(
            fc.record({
              key: fc.nat(39),
              dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 150 }), fc.integer({ min: 0, max: 2500 })),
              cost: fc.integer({ min: 1, max: 2 }),
            }),
            { maxLength: 250 },
          ),
          fc.integer({ min: 1, max: 40 }),
          fc.integer({ min: 1, max: smallest - 1 }),
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 1, max: 128 }),
          (requests, keys, threshold, hashes, slots) => {
            const { clock, store } = setup(threshold, { hashes, slots })
            const shadow = new MemoryStore({ now: () => clock.t })
            for (const request of requests) {
              const key = `k${request.key % keys}`
              clock.t += request.dt
              const outcomes = store.consume(key, set, request.cost) as readonly Outcome[]
              if (outcomes.every((o) => o.allowed)) {
                const truth = shadow.consume(key, set, request.cost)
                expect(truth.every((o) => o.allowed)).toBe(true)
                // Nor does it promise more than is left.
                expect(outcomes.map((o, i) => o.remaining <= (truth[i] as Outcome).remaining)).not.toContain(false)
              }
            }
          },
        ),
        { numRuns: 300 },
      )
    },
  )

  it('requires a threshold below every limit, naming the field', () => {
    expect(() => new FilteredStore({ store: new MemoryStore(), threshold: 0 })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'threshold', value: 0 }),
    )
    expect(() => new FilteredStore({ store: {} as never, threshold: 1 })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'store' }),
    )
    const store = new FilteredStore({ store: new MemoryStore(), threshold: 5 })
    expect(() => store.consume('a', parsePolicies(['100/min', '5/s']), 1)).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'threshold', value: 5 }),
    )
  })
})
