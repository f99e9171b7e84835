import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { StoreFullError } from './errors.js'
import { MemoryStore } from './memory-store.js'
import { ALGORITHMS, parsePolicies } from './policy.js'

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

  it('keeps inserting in constant time while expired keys churn', () => {
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

  // A key of the store's first policy alone is held as that policy's state until it is limited;
  // in `boxed` the same policy is the store's second, so every key there has an entry.
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a key held as its one state decides as one held in an entry`, () => {
      const actions = fc.array(
        fc.record({
          op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'refund', 'penalize', 'reset'),
          key: fc.constantFrom('a', 'b', 'c'),
          cost: fc.integer({ min: 1, max: 3 }),
          gap: fc.integer({ min: 0, max: 700 }),
        }),
        { minLength: 1, maxLength: 120 },
      )
      fc.assert(
        fc.property(actions, (steps) => {
          const clock = { now: 1_000_000 }
          const alone = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          const boxed = new MemoryStore({ maxKeys: 2, now: () => clock.now })
          boxed.consume('other', parsePolicies('1/min'), 1)
          boxed.reset('other', parsePolicies('1/min'))
          const set = parsePolicies({ limit: 4, window: 1000, algorithm })
          const run = (store: MemoryStore, op: string, key: string, cost: number): unknown => {
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
          for (const { op, key, cost, gap } of steps) {
            clock.now += gap
            expect(run(alone, op, key, cost)).toEqual(run(boxed, op, key, cost))
            expect(alone.size).toBe(boxed.size)
          }
          for (const key of ['a', 'b', 'c']) expect(alone.peek(key, set)).toEqual(boxed.peek(key, set))
        }),
        { numRuns: 150 },
      )
    })
  }

  it('forgets everything on clear', () => {
    const { store, hit } = setup(10)
    hit('a')
    store.clear()
    expect(store.size).toBe(0)
    expect(store.peek('a', perMinute)[0]?.remaining).toBe(2)
  })
})
