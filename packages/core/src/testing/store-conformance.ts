import { windowStart } from '../algorithms/fixed-window.js'
import { type AlgorithmState, type Outcome, peekOutcome, penalize, refund } from '../algorithms/index.js'
import { calendarResolver } from '../policies/calendar-set.js'
import {
  ALGORITHMS,
  type AlgorithmName,
  capacityOf,
  isNamed,
  type Policy,
  type PolicyInput,
  type PolicyOptions,
  type PolicySet,
  parsePolicies,
} from '../policies/policy.js'
import { evaluate, type Store } from '../stores/contract.js'
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

/** What a case resolves with when it did not run: what it needs that the store does not declare. */
export interface ConformanceSkip {
  readonly skipped: string
}

/**
 * One check: `run` resolves when the store behaves (with a `ConformanceSkip` when the store does
 * not declare what the case needs), and rejects with what differed otherwise.
 */
export interface ConformanceCase {
  readonly name: string
  run(): Promise<ConformanceSkip | undefined>
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
  // Windows from each key's first request; the trace's pauses let windows end and new ones open.
  [{ limit: 5, window: 1000, algorithm: 'fixed-window', start: 'first-request' }],
  [
    { limit: 4, window: 700, algorithm: 'fixed-window', start: 'first-request' },
    { limit: 6, window: 1000, algorithm: 'fixed-window' },
  ],
  // Warming buckets: cold from the first request, cooling again in the trace's pauses.
  [{ limit: 8, window: 1000, algorithm: 'gcra', burst: 3, warmup: 1500 }],
  [
    { limit: 6, window: 1000, algorithm: 'token-bucket', warmup: 2000, coldFactor: 4 },
    { limit: 9, window: 2000, algorithm: 'sliding-window' },
  ],
]

const HOUR = 3_600_000

/**
 * Calendar periods as the limiter resolves them (`calendar-set.ts`): fixed windows at an offset,
 * of irregular lengths (months of 28 to 31 days, local days of 23 and 25 hours), from `from`.
 */
const CALENDAR_TRACES: readonly { readonly label: string; readonly from: number; readonly limits: PolicyInput[] }[] = [
  {
    label: 'UTC months (January’s 31 days, February’s 28)',
    from: Date.UTC(2026, 0, 29),
    limits: [{ limit: 5, period: 'month' }],
  },
  {
    label: 'New York days (8 March 2026 has 23 hours)',
    from: Date.UTC(2026, 2, 6, 20),
    limits: [{ limit: 4, period: 'day', timeZone: 'America/New_York' }],
  },
  {
    label: 'Berlin days (25 October 2026 has 25 hours)',
    from: Date.UTC(2026, 9, 23, 12),
    limits: [{ limit: 4, period: 'day', timeZone: 'Europe/Berlin' }],
  },
  {
    label: 'a named month anchored on the 31st (February’s ends on the 28th) and Tokyo weeks',
    from: Date.UTC(2026, 1, 20),
    limits: [
      { limit: 9, period: 'month', anchor: '2026-01-31', name: 'billing' },
      { limit: 6, period: 'week', timeZone: 'Asia/Tokyo' },
    ],
  },
]

/** What `store` does not declare that `policies` need, or undefined when it serves them all. */
function unserved(store: Store, policies: readonly Policy[]): string | undefined {
  for (const policy of policies) {
    const { algorithm } = policy
    if (!(store.algorithms?.includes(algorithm) ?? true)) return `the store does not serve ${algorithm} (algorithms)`
    if (isNamed(policy) && !(store.namedAlgorithms?.includes(algorithm) ?? true)) {
      return `the store does not keep named ${algorithm} policies across a change of limit (namedAlgorithms)`
    }
    if ((policy.calendar !== undefined || policy.offset !== 0) && store.calendarPeriods !== true) {
      return 'the store does not start fixed windows at an offset (calendarPeriods)'
    }
    if (policy.start === 'first-request' && store.firstRequestWindows !== true) {
      return "the store does not start fixed windows at a key's first request (firstRequestWindows)"
    }
    if (policy.warmup > 0 && store.warmup !== true) return 'the store does not follow warm-up (warmup)'
  }
  return undefined
}

/**
 * The reference a store is compared with: the core transitions, refunds and penalties on states
 * kept per policy id, as every store keeps them (so a named policy's state outlives its limit).
 */
class Reference {
  readonly #states = new Map<string, AlgorithmState>()

  consume(set: PolicySet, now: number, cost: number): Outcome[] {
    const result = evaluate(this.#of(set), now, set, cost)
    const written = result.allowed ? set.policies.map((_, i) => i) : (result.blocks ?? [])
    for (const i of written) this.#states.set((set.policies[i] as Policy).id, result.states[i])
    return result.outcomes
  }

  peek(set: PolicySet, now: number): Outcome[] {
    const states = this.#of(set)
    return set.policies.map((policy, i) => peekOutcome(states[i], now, policy))
  }

  refund(set: PolicySet, now: number, cost: number, admittedAt?: number): void {
    for (const policy of set.policies) {
      const state = this.#states.get(policy.id)
      if (state !== undefined) this.#states.set(policy.id, refund(state, now, policy, cost, admittedAt))
    }
  }

  penalize(set: PolicySet, now: number, cost: number): void {
    for (const policy of set.policies) {
      this.#states.set(policy.id, penalize(this.#states.get(policy.id), now, policy, cost))
    }
  }

  #of(set: PolicySet): (AlgorithmState | undefined)[] {
    return set.policies.map((policy) => this.#states.get(policy.id))
  }
}

/**
 * A consume checked against the reference: every outcome alike; on an approximate store (see
 * `Store.approximate`), only that it admits nothing the reference denies (the reference takes
 * what the store admitted, so it counts what the store did).
 */
async function checkConsume(
  store: Store,
  key: string,
  set: PolicySet,
  cost: number,
  now: number,
  reference: Reference,
  what: string,
): Promise<readonly Outcome[]> {
  const outcomes = await store.consume(key, set, cost)
  if (store.approximate !== true) {
    expectEqual(outcomes, reference.consume(set, now, cost), what)
  } else if (outcomes.every((outcome) => outcome.allowed)) {
    const expected = reference.consume(set, now, cost)
    expectTrue(
      expected.every((outcome) => outcome.allowed),
      `${what}: admitted where the reference denies, ${JSON.stringify(expected)}`,
    )
  }
  return outcomes
}

/** A peek checked against the reference: alike; on an approximate store, never more remaining. */
async function checkPeek(
  store: Store,
  key: string,
  set: PolicySet,
  now: number,
  reference: Reference,
  what: string,
): Promise<void> {
  const outcomes = await store.peek(key, set)
  const expected = reference.peek(set, now)
  if (store.approximate !== true) return expectEqual(outcomes, expected, what)
  for (const [i, outcome] of outcomes.entries()) {
    const most = (expected[i] as Outcome).remaining
    expectTrue(outcome.remaining <= most, `${what}: ${outcome.remaining} remaining, above the reference's ${most}`)
  }
}

/** Why a case that reads exact counts cannot run on the store, if it cannot. */
function inexact(store: Store): string | undefined {
  return store.approximate === true ? 'the store decides on estimates (approximate)' : undefined
}

/** A named policy of `algorithm` on a plan of `limit` (and `burst`, where the algorithm has one). */
function planOf(algorithm: AlgorithmName, limit: number, burst: number): PolicySet {
  const options: PolicyOptions = { name: 'plan', limit, window: 1000, algorithm }
  if (algorithm === 'token-bucket' || algorithm === 'gcra') options.burst = burst
  if (algorithm === 'sliding-window') options.precision = 4
  return parsePolicies(options)
}

/** One policy of `algorithm`, 5 per second (the sliding window in 4 sub-windows). */
function fiveAPer(algorithm: AlgorithmName): PolicySet {
  return parsePolicies(
    algorithm === 'sliding-window'
      ? { limit: 5, window: 1000, algorithm, precision: 4 }
      : { limit: 5, window: 1000, algorithm },
  )
}

/**
 * The behaviour every `Store` must have, as framework-neutral cases: run each with your test
 * runner (`for (const c of storeConformanceCases(options)) it(c.name, c.run)`). The trace cases
 * compare every outcome with the reference transitions of `@sluice/core` (what `MemoryStore`
 * does), so a store that passes decides exactly as the built-in ones. A case that needs what the
 * store does not declare (an algorithm outside `algorithms`, a named policy outside
 * `namedAlgorithms`, an offset window without `calendarPeriods`, no `refund` or `penalize`)
 * resolves with a `ConformanceSkip` saying so, without running.
 */
export function storeConformanceCases(options: StoreConformanceOptions): ConformanceCase[] {
  let keys = 0
  const freshKey = (name: string) => `conformance:${name}:${++keys}`

  type Body = (store: Store, clock: { now: number }) => Promise<void>
  /** What a case needs of the store: the reason it cannot run on this one, or undefined. */
  type Needs = (store: Store) => string | undefined

  const cases: ConformanceCase[] = []
  const add = (name: string, needs: Needs, body: Body) =>
    cases.push({
      name,
      async run() {
        const clock = { now: START }
        const store = await options.createStore(() => clock.now)
        try {
          const skipped = needs(store)
          if (skipped !== undefined) return { skipped }
          await body(store, clock)
          return undefined
        } finally {
          await options.dispose?.(store)
        }
      },
    })
  const always: Needs = () => undefined
  const refunding =
    (policies: readonly Policy[]): Needs =>
    (store) =>
      store.refund === undefined ? 'the store has no refund' : (inexact(store) ?? unserved(store, policies))
  const penalizing =
    (policies: readonly Policy[]): Needs =>
    (store) =>
      store.penalize === undefined ? 'the store has no penalize' : (inexact(store) ?? unserved(store, policies))
  const serving =
    (...sets: PolicySet[]): Needs =>
    (store) =>
      unserved(
        store,
        sets.flatMap((set) => set.policies),
      )

  for (const [index, inputs] of TRACE_SETS.entries()) {
    const set = parsePolicies(inputs)
    const label = set.policies
      .map(
        (p) =>
          `${p.algorithm} ${p.limit}/${p.window}ms${p.start === 'first-request' ? ' from the first request' : ''}${
            p.warmup > 0 ? ` warming over ${p.warmup}ms` : ''
          }`,
      )
      .join(' + ')
    add(`decides as the reference transitions on a random trace: ${label}`, serving(set), async (store, clock) => {
      const next = seededRandom(index + 1)
      const key = freshKey('trace')
      const reference = new Reference()
      for (let i = 0; i < 120; i++) {
        clock.now += Math.floor(next() * 250)
        if (next() < 0.15) {
          await checkPeek(store, key, set, clock.now, reference, `peek #${i} at +${clock.now - START} ms`)
          continue
        }
        const cost = 1 + Math.floor(next() * 2)
        const what = `consume #${i} (cost ${cost}) at +${clock.now - START} ms`
        await checkConsume(store, key, set, cost, clock.now, reference, what)
      }
    })
  }

  for (const [index, algorithm] of ALGORITHMS.entries()) {
    const bursty = algorithm === 'token-bucket' || algorithm === 'gcra'
    const changes = bursty ? 'limit and burst' : 'limit'
    add(
      `keeps a named ${algorithm} policy's usage across plan changes (its ${changes} changing on a random trace)`,
      serving(planOf(algorithm, 5, 5)),
      async (store, clock) => {
        const key = freshKey('plan')
        // The units used stay used, read against the new plan: an upgrade leaves the difference, a
        // downgrade below the usage leaves nothing (a store that starts the new plan afresh fails here).
        clock.now += 100
        await store.consume(key, planOf(algorithm, 5, 5), 3)
        const upgraded = (await store.peek(key, planOf(algorithm, 10, 10)))[0]?.remaining ?? Number.NaN
        const left = 'remaining of 10 after 3 of 5'
        if (store.approximate === true) expectTrue(upgraded <= 7, `${left}: at most 7, got ${upgraded}`)
        else expectEqual(upgraded, 7, left)
        const downgraded = await store.consume(key, planOf(algorithm, 2, 2), 1)
        expectEqual(downgraded[0]?.allowed, false, 'a request on a plan of 2 after 3 used')
        await store.reset(key, planOf(algorithm, 5, 5))

        const next = seededRandom(100 + index)
        const reference = new Reference()
        let set = planOf(algorithm, 5, 5)
        for (let i = 0; i < 150; i++) {
          clock.now += Math.floor(next() * 250)
          const draw = next()
          if (draw < 0.25) {
            if (draw < 0.12) {
              const limit = 2 + Math.floor(next() * 11)
              set = planOf(algorithm, limit, bursty ? 1 + Math.floor(next() * 2 * limit) : limit)
            }
            const what = `peek #${i} on ${set.policies[0]?.limit}/${set.policies[0]?.burst} at +${clock.now - START} ms`
            await checkPeek(store, key, set, clock.now, reference, what)
            continue
          }
          const cost = 1 + Math.floor(next() * Math.min(2, capacityOf(set.policies[0] as Policy)))
          const plan = `${set.policies[0]?.limit}/${set.policies[0]?.burst}`
          const what = `consume #${i} (cost ${cost}) on ${plan} at +${clock.now - START} ms`
          await checkConsume(store, key, set, cost, clock.now, reference, what)
        }
      },
    )
  }

  {
    const fast = planOf('token-bucket', 10, 10)
    const slow = planOf('token-bucket', 1, 10)
    add(
      'a named token bucket refills at the plan it was written under until a request under another plan',
      (store) => inexact(store) ?? serving(fast, slow)(store),
      async (store, clock) => {
        // A store may forget a bucket at its reset time under the plan it was written at, so the
        // old plan stays in force until the switch: full 2.5 s after emptying 10 at 10/s, on 1/s too.
        const forgotten = freshKey('slower-plan')
        const reference = new Reference()
        clock.now += 100
        await checkConsume(store, forgotten, fast, 10, clock.now, reference, 'the burst of 10 used at 10/s')
        clock.now += 2500
        await checkPeek(store, forgotten, slow, clock.now, reference, 'a peek on 1/s 2.5 s later')
        expectEqual((await store.peek(forgotten, slow))[0]?.remaining, 10, 'remaining on 1/s 2.5 s after emptying')

        // Within the old plan's refill: its rate until the request under the new plan, then the new rate.
        const switched = freshKey('slower-plan')
        const other = new Reference()
        await checkConsume(store, switched, fast, 10, clock.now, other, 'the burst of 10 used at 10/s')
        clock.now += 500
        const after = await checkConsume(store, switched, slow, 1, clock.now, other, 'a request on 1/s 0.5 s later')
        expectEqual(after[0]?.remaining, 4, 'remaining after a request on 1/s 0.5 s after emptying at 10/s')
        clock.now += 1000
        await checkPeek(store, switched, slow, clock.now, other, 'a peek on 1/s a second after the switch')
        expectEqual((await store.peek(switched, slow))[0]?.remaining, 5, 'remaining a second after the switch')
      },
    )
  }

  for (const [index, { label, from, limits }] of CALENDAR_TRACES.entries()) {
    const periods = parsePolicies(limits)
    const resolve = calendarResolver(periods) as (key: string, now: number) => PolicySet
    const needs: Needs = (store) => unserved(store, resolve('', from).policies)
    for (const kept of [false, true]) {
      const how = kept
        ? 'one period’s window kept past its end (a store clock ahead of the limiter’s)'
        : 'each request on the period holding it'
      add(`decides calendar periods at an offset as the reference: ${label}, ${how}`, needs, async (store, clock) => {
        const next = seededRandom(200 + 2 * index + Number(kept))
        const key = freshKey('calendar')
        const reference = new Reference()
        clock.now = from
        const first = resolve(key, clock.now)
        for (let i = 0; i < 120; i++) {
          const set = kept ? first : resolve(key, clock.now)
          const draw = next()
          if (draw < 0.45) {
            // Just before, at or just after the end of one policy's period.
            const policy = set.policies[Math.floor(next() * set.policies.length)] as Policy
            const end = windowStart(clock.now, policy) + policy.window
            clock.now = Math.max(clock.now, end + Math.floor(next() * 3) - 1)
          } else {
            clock.now += Math.floor(next() * (draw < 0.55 ? 8 * HOUR : 250))
          }
          const now = kept ? first : resolve(key, clock.now)
          const at = `at ${new Date(clock.now).toISOString()}`
          if (next() < 0.15) {
            await checkPeek(store, key, now, clock.now, reference, `peek #${i} ${at}`)
            continue
          }
          const cost = 1 + Math.floor(next() * 2)
          await checkConsume(store, key, now, cost, clock.now, reference, `consume #${i} (cost ${cost}) ${at}`)
        }
      })
    }
  }

  const month = parsePolicies({ limit: 5, period: 'month' })
  const resolveMonth = calendarResolver(month) as (key: string, now: number) => PolicySet
  add(
    'a late refund (admittedAt in last month) gives nothing back to this month',
    refunding(resolveMonth('', START).policies),
    async (store, clock) => {
      const key = freshKey('late-refund')
      const refundOf = store.refund?.bind(store) as NonNullable<Store['refund']>
      const admittedAt = Date.UTC(2026, 0, 31, 23, 59, 59, 999)
      clock.now = admittedAt
      await store.consume(key, resolveMonth(key, admittedAt), 2)
      clock.now = Date.UTC(2026, 1, 1)
      const february = resolveMonth(key, clock.now)
      await store.consume(key, february, 1)
      // As the limiter sends it: the set of the month the request was admitted in.
      await refundOf(key, resolveMonth(key, admittedAt), 2, admittedAt)
      expectEqual((await store.peek(key, february))[0]?.remaining, 4, 'February’s remaining after a late refund')
      await refundOf(key, february, 1, clock.now)
      expectEqual((await store.peek(key, february))[0]?.remaining, 5, 'February’s remaining after its own refund')
    },
  )

  add(
    'refund with admittedAt gives back into the window of admission, never into a later one',
    refunding(fiveAPer('fixed-window').policies),
    async (store, clock) => {
      const set = fiveAPer('fixed-window')
      const key = freshKey('admitted-at')
      const refundOf = store.refund?.bind(store) as NonNullable<Store['refund']>
      const admittedAt = START + 900
      clock.now = admittedAt
      await store.consume(key, set, 3)
      clock.now = START + 1100
      await store.consume(key, set, 1)
      await refundOf(key, set, 3, admittedAt)
      expectEqual((await store.peek(key, set))[0]?.remaining, 4, 'remaining after a refund admitted a window ago')
      await refundOf(key, set, 1, START + 1000)
      expectEqual((await store.peek(key, set))[0]?.remaining, 5, 'remaining after a refund admitted in this window')
    },
  )

  for (const [index, algorithm] of ALGORITHMS.entries()) {
    const set = fiveAPer(algorithm)
    add(
      `refund with admittedAt gives back as the reference on a random trace: ${algorithm}`,
      refunding(set.policies),
      async (store, clock) => {
        const next = seededRandom(300 + index)
        const key = freshKey('refund-trace')
        const refundOf = store.refund?.bind(store) as NonNullable<Store['refund']>
        const reference = new Reference()
        const admissions: number[] = []
        for (let i = 0; i < 120; i++) {
          clock.now += Math.floor(next() * 300)
          const draw = next()
          const at = `at +${clock.now - START} ms`
          if (draw < 0.5) {
            const cost = 1 + Math.floor(next() * 2)
            const expected = reference.consume(set, clock.now, cost)
            if (expected.every((outcome) => outcome.allowed)) admissions.push(clock.now)
            expectEqual(await store.consume(key, set, cost), expected, `consume #${i} (cost ${cost}) ${at}`)
            continue
          }
          if (draw < 0.85 && admissions.length > 0) {
            // One of the last admissions: often in this window or sub-window, sometimes in one gone by.
            const admittedAt = admissions[Math.max(0, admissions.length - 1 - Math.floor(next() * 4))] as number
            const cost = 1 + Math.floor(next() * 2)
            reference.refund(set, clock.now, cost, admittedAt)
            await refundOf(key, set, cost, admittedAt)
            const what = `peek after refund #${i} of ${cost} admitted ${clock.now - admittedAt} ms ago ${at}`
            expectEqual(await store.peek(key, set), reference.peek(set, clock.now), what)
            continue
          }
          expectEqual(await store.peek(key, set), reference.peek(set, clock.now), `peek #${i} ${at}`)
        }
      },
    )
  }

  for (const [index, algorithm] of ALGORITHMS.entries()) {
    const set = fiveAPer(algorithm)
    add(
      `penalize takes a ${algorithm} key below zero, and the next requests wait as the reference says`,
      penalizing(set.policies),
      async (store, clock) => {
        const key = freshKey('penalize')
        const penalizeOf = store.penalize?.bind(store) as NonNullable<Store['penalize']>
        const reference = new Reference()
        const filled = new Reference()
        clock.now = START + 100
        reference.consume(set, clock.now, 2)
        filled.consume(set, clock.now, 2)
        await store.consume(key, set, 2)
        clock.now += 300
        // 2 used and 6 more: past the limit of 5, where `filled` took only what was left.
        reference.penalize(set, clock.now, 6)
        filled.consume(set, clock.now, (filled.peek(set, clock.now)[0] as Outcome).remaining)
        await penalizeOf(key, set, 6)
        const peeked = await store.peek(key, set)
        expectEqual(peeked, reference.peek(set, clock.now), 'peek after a penalty of 6 on 2 used of 5')
        expectEqual(peeked[0]?.remaining, 0, 'remaining after the penalty')
        const denied = (await store.consume(key, set, 1))[0] as Outcome
        expectEqual([denied], reference.consume(set, clock.now, 1), 'the request after the penalty')
        const atLimit = filled.consume(set, clock.now, 1)[0] as Outcome
        // A fixed window forgets its whole count at the window's end, however far past the limit.
        const waitsLonger = algorithm === 'fixed-window' || denied.retryAfter > atLimit.retryAfter
        expectTrue(
          !denied.allowed && waitsLonger,
          `denied for longer than a key at its limit (${atLimit.retryAfter} ms), got ${JSON.stringify(denied)}`,
        )
        const next = seededRandom(400 + index)
        for (let i = 0; i < 40; i++) {
          clock.now += Math.floor(next() * 200)
          const cost = 1 + Math.floor(next() * 2)
          const expected = reference.consume(set, clock.now, cost)
          const at = `at +${clock.now - START} ms`
          expectEqual(
            await store.consume(key, set, cost),
            expected,
            `consume #${i} (cost ${cost}) after the penalty ${at}`,
          )
        }
      },
    )
  }

  add(
    'admits up to the limit, then denies with a retryAfter, then admits once time has passed',
    always,
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

  add('a denied request consumes nothing from any policy (all-or-nothing)', always, async (store) => {
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

  add('peek reports without consuming', always, async (store) => {
    const set = parsePolicies(['2/min'])
    const key = freshKey('peek')
    for (let i = 0; i < 5; i++) expectEqual((await store.peek(key, set))[0]?.remaining, 2, 'remaining after peeks')
    expectEqual((await store.consume(key, set, 1))[0]?.remaining, 1, 'remaining after one consume')
  })

  // Limits of 2, not 1: a store may need room below a limit (FilteredStore's threshold).
  add('reset forgets a key, and only that key', always, async (store) => {
    const set = parsePolicies(['2/min'])
    const [a, b] = [freshKey('reset'), freshKey('reset')]
    for (const key of [a, a, b, b]) await store.consume(key, set, 1)
    await store.reset(a, set)
    expectEqual((await store.consume(a, set, 1))[0]?.allowed, true, 'the reset key')
    expectEqual((await store.consume(b, set, 1))[0]?.allowed, false, 'the other key')
  })

  add('keys are independent, whatever their content or length', always, async (store) => {
    const set = parsePolicies(['2/min'])
    const base = freshKey('keys')
    const variants = ['', '{a}', 'a', '%7Ba%7D', 'a:b', 'ü🙂', '\u0000', 'x'.repeat(1000), 'x'.repeat(1001)]
    for (const variant of variants) {
      for (const nth of ['first', 'second']) {
        expectEqual(
          (await store.consume(base + variant, set, 1))[0]?.allowed,
          true,
          `${nth} request of ${JSON.stringify(variant.slice(0, 20))}`,
        )
      }
    }
    for (const variant of variants) {
      expectEqual(
        (await store.consume(base + variant, set, 1))[0]?.allowed,
        false,
        `third request of ${JSON.stringify(variant.slice(0, 20))}`,
      )
    }
  })

  add('concurrent requests for one key never admit more than the limit', always, async (store) => {
    const set = parsePolicies(['5/min', '20/h'])
    const key = freshKey('concurrent')
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.consume(key, set, 1)))
    expectEqual(outcomes.filter((o) => o.every((p) => p.allowed)).length, 5, 'admitted out of 20 at once')
  })

  add('a cost larger than what is left is denied and takes nothing', inexact, async (store) => {
    const set = parsePolicies(['5/min'])
    const key = freshKey('cost')
    await store.consume(key, set, 3)
    expectEqual((await store.consume(key, set, 3))[0]?.allowed, false, 'cost 3 with 2 left')
    expectEqual((await store.consume(key, set, 2))[0]?.remaining, 0, 'cost 2 with 2 left')
  })

  add('refund gives back what a consume took', refunding([]), async (store) => {
    const refundOf = store.refund?.bind(store) as NonNullable<Store['refund']>
    const set = parsePolicies(['2/min'])
    const key = freshKey('refund')
    await store.consume(key, set, 2)
    await refundOf(key, set, 1)
    expectEqual((await store.peek(key, set))[0]?.remaining, 1, 'remaining after a refund of 1')
    await refundOf(freshKey('refund-absent'), set, 1)
  })

  return cases
}
