import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Outcome } from '../algorithms/index.js'
import { type PolicyInput, parsePolicies } from '../policies/policy.js'
import { MemoryStore } from './memory-store.js'
import { SketchStore } from './sketch-store.js'

const LIMIT_SETS: PolicyInput[][] = [
  [{ limit: 5, window: 1000, algorithm: 'fixed-window' }],
  [{ limit: 5, window: 1000, algorithm: 'sliding-window' }],
  [
    { limit: 4, window: 300, algorithm: 'sliding-window', precision: 3 },
    { limit: 9, window: 2000, algorithm: 'fixed-window' },
  ],
]

/** Requests as (key, time step, cost, reset?) with a clock that only moves forward. */
const stream = (keys: number) =>
  fc.array(
    fc.record({
      key: fc.nat(keys - 1),
      dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 2500 })),
      cost: fc.integer({ min: 1, max: 3 }),
      reset: fc.nat(29).map((n) => n === 0),
    }),
    { maxLength: 250 },
  )

describe('SketchStore', () => {
  it.each(LIMIT_SETS.map((limits, i) => [i, limits] as const))(
    'decides exactly like MemoryStore when keys do not collide (limits #%i)',
    (_, limits) => {
      fc.assert(
        fc.property(stream(6), fc.integer({ min: 0, max: 1e12 }), (requests, start) => {
          const clock = { t: start }
          const now = () => clock.t
          const set = parsePolicies(limits)
          const sketch = new SketchStore({ hashes: 4, slots: 4096, now })
          const exact = new MemoryStore({ now })
          for (const { key, dt, cost, reset } of requests) {
            clock.t += dt
            if (reset) {
              sketch.reset(`k${key}`, set)
              exact.reset(`k${key}`, set)
            }
            expect(sketch.consume(`k${key}`, set, cost)).toEqual(exact.consume(`k${key}`, set, cost))
            expect(sketch.peek(`k${key}`, set)).toEqual(exact.peek(`k${key}`, set))
          }
        }),
      )
    },
  )

  it.each(LIMIT_SETS.map((limits, i) => [i, limits] as const))(
    'never admits what an exact store would deny, nor reports more remaining, however keys collide (limits #%i)',
    (_, limits) => {
      fc.assert(
        fc.property(
          stream(40),
          fc.integer({ min: 1, max: 40 }),
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 1, max: 256 }),
          (requests, keys, hashes, slots) => {
            const clock = { t: 0 }
            const now = () => clock.t
            const set = parsePolicies(limits)
            // From a few counters (every key collides) to many (few do).
            const sketch = new SketchStore({ hashes, slots, now })
            // The exact store sees only what the sketch admitted, so it knows each key's true
            // history: if the sketch ever counted low, the exact store would deny here.
            const shadow = new MemoryStore({ now })
            for (const request of requests) {
              const key = `k${request.key % keys}`
              clock.t += request.dt
              if (request.reset) {
                sketch.reset(key, set)
                shadow.reset(key, set)
              }
              const outcomes = sketch.consume(key, set, request.cost)
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

  it('counts all-or-nothing: a request denied by one policy takes nothing from the others', () => {
    const clock = { t: 0 }
    const set = parsePolicies([
      { limit: 2, window: 1000, algorithm: 'fixed-window' },
      { limit: 10, window: 60_000, algorithm: 'fixed-window' },
    ])
    const store = new SketchStore({ now: () => clock.t })
    for (let i = 0; i < 5; i++) store.consume('a', set, 1)
    expect(store.peek('a', set).map((o) => o.remaining)).toEqual([0, 8])
  })

  it('keeps its memory fixed however many keys arrive', () => {
    const set = parsePolicies('100/min')
    const store = new SketchStore({ hashes: 4, slots: 1024, now: () => 0 })
    store.consume('first', set, 1)
    const bytes = store.bytes
    // One sketch per sub-window kept: precision (10 by default) + 1.
    expect(bytes).toBe(11 * 4 * 1024 * 8)
    for (let i = 0; i < 50_000; i++) store.consume(`client:${i}`, set, 1)
    expect(store.bytes).toBe(bytes)
  })

  it('rejects algorithms that need state per key, at first use', () => {
    const store = new SketchStore()
    for (const algorithm of ['gcra', 'token-bucket', 'sliding-log'] as const) {
      const set = parsePolicies(['10/s', { limit: 5, window: 1000, algorithm }])
      expect(() => store.consume('a', set, 1)).toThrow(
        expect.objectContaining({ name: 'ConfigError', field: 'limits[1].algorithm', value: algorithm }),
      )
    }
  })

  it('validates its options, naming the field', () => {
    expect(() => new SketchStore({ now: 0 as never })).toThrow(expect.objectContaining({ field: 'now' }))
    expect(() => new SketchStore({ slots: 0 })).toThrow(expect.objectContaining({ field: 'slots' }))
  })
})
