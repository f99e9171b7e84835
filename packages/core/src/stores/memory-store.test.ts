import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { AlgorithmState } from '../algorithms/index.js'
import { StoreFullError } from '../diagnostics/errors.js'
import { ALGORITHMS, type PolicySet, parsePolicies } from '../policies/policy.js'
import { evaluate } from './contract.js'
import { MemoryStore } from './memory-store.js'

const perMinute = parsePolicies('2/min')

function setup(maxKeys: number) {
  const clock = { now: 0 }
  const store = new MemoryStore({ maxKeys, now: () => clock.now })
  const hit = (key: string) => store.consume(key, perMinute, 1)[0]
  return { clock, store, hit }
}

describe('MemoryStore', () => {
  it('never evicts, and so never resets, a limited key under a flood of new keys', () => {
    const { store, hit } = setup(100)
    hit('attacker')
    hit('attacker')
    expect(hit('attacker')?.allowed).toBe(false)
    for (let i = 0; i < 10_000; i++) hit(`flood-${i}`)
    expect(store.size).toBe(100)
    expect(hit('attacker')?.allowed).toBe(false)
  })

  it('evicts a key that is not limited when full, passing over limited ones', () => {
    const { store, hit } = setup(3)
    hit('old')
    hit('limited')
    hit('limited')
    hit('newer')
    hit('newest')
    expect(store.size).toBe(3)
    expect(store.peek('limited', perMinute)[0]?.remaining).toBe(0)
    expect(store.peek('newest', perMinute)[0]?.remaining).toBe(1)
    const forgotten = ['old', 'newer'].filter((key) => store.peek(key, perMinute)[0]?.remaining === 2)
    expect(forgotten).toHaveLength(1)
  })

  it('stays within maxKeys while expired keys churn, a returning key starting afresh', () => {
    const { clock, store, hit } = setup(5_000)
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5_000; i++) hit(`k${i}`)
      clock.now += 120_000
    }
    expect(store.size).toBeLessThanOrEqual(5_000)
    expect(hit('k1')?.remaining).toBe(1)
  })

  it('throws StoreFullError when every key is limited, and recovers once they expire', () => {
    const { clock, hit } = setup(2)
    for (const key of ['a', 'a', 'b', 'b']) hit(key)
    expect(() => hit('c')).toThrow(StoreFullError)
    expect(() => hit('c')).toThrow(/all 2 keys are currently limited/)
    clock.now += 120_000 // a sliding window forgets after two windows
    expect(hit('c')?.allowed).toBe(true)
  })

  it('expires lazily, reuses expired entries, and sweeps them once half full, with no timer', () => {
    const { clock, store, hit } = setup(40)
    for (let i = 0; i < 10; i++) hit(`k${i}`)
    clock.now += 120_000 // a sliding window forgets after two windows
    expect(store.peek('k0', perMinute)[0]?.remaining).toBe(2)
    expect(hit('k0')?.remaining).toBe(1)
    for (let i = 0; i < 10; i++) hit(`fresh${i}`)
    expect(store.size).toBe(20)
    // From half full on, every new key moves the sweep two entries on, forgetting expired ones.
    for (let i = 10; i < 20; i++) hit(`fresh${i}`)
    expect(store.size).toBeLessThan(30)
    expect(store.peek('k0', perMinute)[0]?.remaining).toBe(1)
  })

  it("shares a policy's state between limiters with the same policy, as Redis does", () => {
    const { store, hit } = setup(10)
    hit('k')
    const withBurst = parsePolicies(['2/min', '10/s'])
    expect(store.consume('k', withBurst, 1).map((o) => o.remaining)).toEqual([0, 9])
    expect(hit('k')?.allowed).toBe(false)
    store.reset('k', parsePolicies('10/s'))
    expect(store.peek('k', withBurst).map((o) => o.remaining)).toEqual([0, 10])
  })

  it('reads a fractional clock as whole milliseconds, so decision times stay whole', () => {
    let now = 1000.75
    const store = new MemoryStore({ now: () => now })
    const set = parsePolicies({ limit: 1, window: 1000, algorithm: 'fixed-window' })
    expect(store.consume('k', set, 1)[0]).toMatchObject({ resetAfter: 1000 })
    now = 1500.9
    expect(store.consume('k', set, 1)[0]).toMatchObject({ allowed: false, retryAfter: 500 })
  })

  it("holds a key of the store's one policy without an entry, and deletes it on reset", () => {
    const { store, hit } = setup(10)
    hit('a')
    hit('b')
    expect(store.size).toBe(2)
    store.reset('a', perMinute)
    expect(store.size).toBe(1)
    expect(store.peek('a', perMinute)[0]?.remaining).toBe(2)
    expect(store.peek('b', perMinute)[0]?.remaining).toBe(1)
  })

  // A key of the store's first policy alone is held as its bare state until another policy's
  // state joins it; in `boxed` the same policies come after another, so every key there has an
  // entry. The sets take turns on the same keys: one, two or three of the policies, or the second
  // alone (not the store's first, so it makes a bare key an entry).
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a key held bare decides as one held in an entry`, () => {
      const policies = [
        { limit: 4, window: 1000, algorithm },
        { limit: 6, window: 3000, algorithm, name: 'second' },
        { limit: 9, window: 7000, algorithm, name: 'third' },
      ] as const
      const sets = [
        parsePolicies([policies[0]]),
        parsePolicies([policies[0], policies[1]]),
        parsePolicies([...policies]),
        parsePolicies([policies[1]]),
      ]
      const actions = fc.array(
        fc.record({
          op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'refund', 'penalize', 'reset'),
          key: fc.constantFrom('a', 'b', 'c'),
          set: fc.constantFrom(0, 1, 1, 2, 3),
          cost: fc.integer({ min: 1, max: 3 }),
          gap: fc.integer({ min: 0, max: 700 }),
        }),
        { minLength: 1, maxLength: 120 },
      )
      fc.assert(
        fc.property(actions, (steps) => {
          const clock = { now: 1_000_000 }
          const bare = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          const boxed = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          bare.peek('k', sets[2] as PolicySet)
          boxed.peek('k', parsePolicies(['1/min', ...policies]))
          const run = (store: MemoryStore, op: string, key: string, set: PolicySet, cost: number): unknown => {
            try {
              if (op === 'consume') return store.consume(key, set, cost)
              if (op === 'peek') return store.peek(key, set)
              if (op === 'refund') return store.refund(key, set, cost)
              if (op === 'penalize') return store.penalize(key, set, cost)
              return store.reset(key, set)
            } catch (error) {
              return error instanceof StoreFullError ? 'full' : error
            }
          }
          for (const { op, key, set, cost, gap } of steps) {
            clock.now += gap
            const policySet = sets[set] as PolicySet
            expect(run(bare, op, key, policySet, cost)).toEqual(run(boxed, op, key, policySet, cost))
            expect(bare.size).toBe(boxed.size)
          }
          for (const key of ['a', 'b', 'c']) {
            expect(bare.peek(key, sets[2] as PolicySet)).toEqual(boxed.peek(key, sets[2] as PolicySet))
          }
        }),
        { numRuns: 150 },
      )
    })
  }

  // The store keeps times from its origin, a day before it was made, each policy on its own time
  // so that windows stay aligned to the epoch: where a store was made must never show. The second
  // policy's rate is a fraction per ms (7 000 / 9), which a GCRA keeps on epoch time.
  const twoWindows = (algorithm: (typeof ALGORITHMS)[number], blockFor?: number): PolicySet =>
    parsePolicies([
      { limit: 4, window: 1_000, algorithm, ...(blockFor === undefined ? {} : { blockFor }) },
      { limit: 9, window: 7_000, algorithm, name: 'slow' },
    ])

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: decides as the transitions do on epoch time, wherever the store's origin falls`, () => {
      const steps = fc.array(
        fc.record({ key: fc.constantFrom('a', 'b'), cost: fc.integer({ min: 1, max: 3 }), gap: fc.nat(1_500) }),
        { minLength: 1, maxLength: 80 },
      )
      fc.assert(
        fc.property(
          fc.integer({ min: 1_600_000_000_000, max: 1_800_000_000_000 }),
          steps,
          fc.boolean(),
          (start, list, one) => {
            const clock = { now: start }
            const store = new MemoryStore({ now: () => clock.now })
            // One policy alone: a key is held as its state, with no entry (see #consumeAlone).
            const set = one ? parsePolicies({ limit: 9, window: 7_000, algorithm }) : twoWindows(algorithm)
            const states = new Map<string, AlgorithmState[]>()
            for (const { key, cost, gap } of list) {
              clock.now += gap
              const expected = evaluate(states.get(key), clock.now, set, cost)
              if (expected.allowed) states.set(key, expected.states)
              expect(store.consume(key, set, cost)).toEqual(expected.outcomes)
            }
          },
        ),
        { numRuns: 100 },
      )
    })

    it(`${algorithm}: two stores made at different times answer every call alike`, () => {
      const actions = fc.array(
        fc.record({
          op: fc.constantFrom(
            'consume',
            'consume',
            'consume',
            'peek',
            'refund',
            'refundAt',
            'penalize',
            'block',
            'reset',
          ),
          key: fc.constantFrom('a', 'b', 'c'),
          cost: fc.integer({ min: 1, max: 3 }),
          gap: fc.nat(2_000),
          back: fc.nat(3_000),
        }),
        { minLength: 1, maxLength: 100 },
      )
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 100_000_000 }), actions, (apart, steps) => {
          const clock = { now: 1_700_000_000_000 }
          const first = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          clock.now += apart
          const second = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          const set = twoWindows(algorithm, 5_000)
          const run = (store: MemoryStore, op: string, key: string, cost: number, back: number): unknown => {
            try {
              if (op === 'consume') return store.consume(key, set, cost)
              if (op === 'peek') return store.peek(key, set)
              if (op === 'refund') return store.refund(key, set, cost)
              if (op === 'refundAt') return store.refund(key, set, cost, store.now() - back)
              if (op === 'penalize') return store.penalize(key, set, cost)
              if (op === 'block') return store.block(key, set, back + 1)
              return store.reset(key, set)
            } catch (error) {
              return error instanceof StoreFullError ? 'full' : error
            }
          }
          for (const { op, key, cost, gap, back } of steps) {
            clock.now += gap
            expect(run(first, op, key, cost, back)).toEqual(run(second, op, key, cost, back))
            expect(first.size).toBe(second.size)
          }
        }),
        { numRuns: 100 },
      )
    })
  }

  it('reports epoch time, and stays aligned to the epoch when the clock steps back', () => {
    const clock = { now: 1_700_000_000_500.6 }
    const store = new MemoryStore({ now: () => clock.now })
    expect(store.now()).toBe(1_700_000_000_500)
    const set = parsePolicies({ limit: 1, window: 60_000, algorithm: 'fixed-window' })
    // 1_700_000_000_500 is 20 500 ms into its minute.
    expect(store.consume('k', set, 1)[0]).toMatchObject({ allowed: true, resetAfter: 39_500 })
    clock.now -= 3_600_000 - 1_000 // an hour less a second back, as a wall clock set right may step
    expect(store.consume('j', set, 1)[0]).toMatchObject({ allowed: true, resetAfter: 38_500 })
  })

  it('forgets everything on clear', () => {
    const { store, hit } = setup(10)
    hit('a')
    store.clear()
    expect(store.size).toBe(0)
    expect(store.peek('a', perMinute)[0]?.remaining).toBe(2)
  })
})
