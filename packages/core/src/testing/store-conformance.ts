import { type AlgorithmState, type Outcome, peekOutcome } from '../algorithms/index.js'
import { ALGORITHMS, type PolicyInput, parsePolicies } from '../policy.js'
import { evaluate, type Store } from '../stores/store.js'
import { seededRandom } from './seeded-random.js'

/** How the conformance suite makes (and disposes of) the store under test. */
export interface StoreConformanceOptions {
  /**
   * A fresh store whose clock is `now` (epoch milliseconds, whole numbers). Called once per case;
   * stores that share a backend (one Redis) need a unique key prefix per call.
   */
  createStore(now: () => number): Store | PromiseLike<Store>
  /** Releases a store after its case (connections, timers). */
  dispose?(store: Store): unknown
}

/** One check: `run` resolves when the store behaves, and rejects with what differed otherwise. */
export interface ConformanceCase {
  readonly name: string
  run(): Promise<void>
}

/** Any instant works: windows are aligned to the clock, so a fixed one keeps cases repeatable. */
const START = Date.UTC(2026, 0, 1)

class ConformanceError extends Error {
  override name = 'ConformanceError'
}

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual)
  const e = JSON.stringify(expected)
  if (a !== e) throw new ConformanceError(`${what}: expected ${e}, got ${a}`)
}

function expectTrue(condition: boolean, what: string): void {
  if (!condition) throw new ConformanceError(what)
}

/** Every algorithm, with the options that change its arithmetic. */
const TRACE_SETS: readonly (readonly PolicyInput[])[] = [
  ...ALGORITHMS.map((algorithm) => [{ limit: 5, window: 1000, algorithm }]),
  [{ limit: 7, window: 1000, algorithm: 'sliding-window', precision: 4 }],
  [{ limit: 4, window: 1000, algorithm: 'gcra', burst: 2 }],
  [{ limit: 10, window: 2000, algorithm: 'token-bucket', burst: 3 }],
  [
    { limit: 3, window: 500, algorithm: 'gcra' },
    { limit: 8, window: 2000, algorithm: 'sliding-window' },
    { limit: 6, window: 1500, algorithm: 'fixed-window' },
    { limit: 5, window: 1000, algorithm: 'sliding-log' },
    { limit: 9, window: 3000, algorithm: 'token-bucket' },
  ],
]

/**
 * The behaviour every `Store` must have, as framework-neutral cases: run each with your test
 * runner (`for (const c of storeConformanceCases(options)) it(c.name, c.run)`). The trace cases
 * compare every outcome with the reference transitions of `@sluice/core` (what `MemoryStore`
 * does), so a store that passes decides exactly as the built-in ones.
 */
export function storeConformanceCases(options: StoreConformanceOptions): ConformanceCase[] {
  let keys = 0
  const freshKey = (name: string) => `conformance:${name}:${++keys}`

  function withStore(body: (store: Store, clock: { now: number }) => Promise<void>): () => Promise<void> {
    return async () => {
      const clock = { now: START }
      const store = await options.createStore(() => clock.now)
      try {
        await body(store, clock)
      } finally {
        await options.dispose?.(store)
      }
    }
  }

  const cases: ConformanceCase[] = []
  const add = (name: string, body: (store: Store, clock: { now: number }) => Promise<void>) =>
    cases.push({ name, run: withStore(body) })

  for (const [index, inputs] of TRACE_SETS.entries()) {
    const set = parsePolicies(inputs)
    const label = set.policies.map((p) => `${p.algorithm} ${p.limit}/${p.window}ms`).join(' + ')
    add(`decides as the reference transitions on a random trace: ${label}`, async (store, clock) => {
      const next = seededRandom(index + 1)
      const key = freshKey('trace')
      let states: AlgorithmState[] | undefined
      for (let i = 0; i < 120; i++) {
        clock.now += Math.floor(next() * 250)
        if (next() < 0.15) {
          const expected = set.policies.map((policy, p) => peekOutcome(states?.[p], clock.now, policy))
          expectEqual(await store.peek(key, set), expected, `peek #${i} at +${clock.now - START} ms`)
          continue
        }
        const cost = 1 + Math.floor(next() * 2)
        const reference = evaluate(states, clock.now, set, cost)
        if (reference.allowed) states = reference.states
        const outcomes = await store.consume(key, set, cost)
        expectEqual(outcomes, reference.outcomes, `consume #${i} (cost ${cost}) at +${clock.now - START} ms`)
      }
    })
  }

  add(
    'admits up to the limit, then denies with a retryAfter, then admits once time has passed',
    async (store, clock) => {
      const set = parsePolicies(['3/s'])
      const key = freshKey('limit')
      for (const remaining of [2, 1, 0]) {
        const [outcome] = await store.consume(key, set, 1)
        expectEqual([outcome?.allowed, outcome?.remaining], [true, remaining], 'an admitted request')
      }
      const denied = (await store.consume(key, set, 1))[0] as Outcome
      expectTrue(
        !denied.allowed && denied.retryAfter > 0,
        `the fourth request is denied with a retryAfter, got ${JSON.stringify(denied)}`,
      )
      clock.now += denied.retryAfter
      const later = (await store.consume(key, set, 1))[0] as Outcome
      expectTrue(later.allowed, `a request after retryAfter (${denied.retryAfter} ms) is admitted`)
    },
  )

  add('a denied request consumes nothing from any policy (all-or-nothing)', async (store) => {
    const set = parsePolicies(['2/s', '10/min'])
    const key = freshKey('atomic')
    await store.consume(key, set, 1)
    await store.consume(key, set, 1)
    for (let i = 0; i < 3; i++) {
      const outcomes = await store.consume(key, set, 1)
      expectEqual(
        outcomes.map((o) => o.allowed),
        [false, true],
        'the 2/s policy denies, the 10/min one would admit',
      )
    }
    const peeked = await store.peek(key, set)
    expectEqual(peeked[1]?.remaining, 8, 'the 10/min policy after 2 admitted and 3 denied requests')
  })

  add('peek reports without consuming', async (store) => {
    const set = parsePolicies(['2/min'])
    const key = freshKey('peek')
    for (let i = 0; i < 5; i++) expectEqual((await store.peek(key, set))[0]?.remaining, 2, 'remaining after peeks')
    expectEqual((await store.consume(key, set, 1))[0]?.remaining, 1, 'remaining after one consume')
  })

  add('reset forgets a key, and only that key', async (store) => {
    const set = parsePolicies(['1/min'])
    const [a, b] = [freshKey('reset'), freshKey('reset')]
    await store.consume(a, set, 1)
    await store.consume(b, set, 1)
    await store.reset(a, set)
    expectEqual((await store.consume(a, set, 1))[0]?.allowed, true, 'the reset key')
    expectEqual((await store.consume(b, set, 1))[0]?.allowed, false, 'the other key')
  })

  add('keys are independent, whatever their content or length', async (store) => {
    const set = parsePolicies(['1/min'])
    const base = freshKey('keys')
    const variants = ['', '{a}', 'a', '%7Ba%7D', 'a:b', 'ü🙂', '\u0000', 'x'.repeat(1000), 'x'.repeat(1001)]
    for (const variant of variants) {
      expectEqual(
        (await store.consume(base + variant, set, 1))[0]?.allowed,
        true,
        `first request of ${JSON.stringify(variant.slice(0, 20))}`,
      )
    }
    for (const variant of variants) {
      expectEqual(
        (await store.consume(base + variant, set, 1))[0]?.allowed,
        false,
        `second request of ${JSON.stringify(variant.slice(0, 20))}`,
      )
    }
  })

  add('concurrent requests for one key never admit more than the limit', async (store) => {
    const set = parsePolicies(['5/min', '20/h'])
    const key = freshKey('concurrent')
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.consume(key, set, 1)))
    expectEqual(outcomes.filter((o) => o.every((p) => p.allowed)).length, 5, 'admitted out of 20 at once')
  })

  add('a cost larger than what is left is denied and takes nothing', async (store) => {
    const set = parsePolicies(['5/min'])
    const key = freshKey('cost')
    await store.consume(key, set, 3)
    expectEqual((await store.consume(key, set, 3))[0]?.allowed, false, 'cost 3 with 2 left')
    expectEqual((await store.consume(key, set, 2))[0]?.remaining, 0, 'cost 2 with 2 left')
  })

  add('refund, when the store has one, gives back what a consume took', async (store) => {
    if (!store.refund) return
    const set = parsePolicies(['2/min'])
    const key = freshKey('refund')
    await store.consume(key, set, 2)
    await store.refund(key, set, 1)
    expectEqual((await store.peek(key, set))[0]?.remaining, 1, 'remaining after a refund of 1')
    await store.refund(freshKey('refund-absent'), set, 1)
  })

  return cases
}
