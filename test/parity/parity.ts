import { type Policy, type PolicySet, parsePolicies } from '@sluice/core'
import { policySetOf } from '@sluice/core/internal'
import type { Awaitable, Outcome, Store } from '@sluice/core/store'
// The limiter's own resolution of calendar periods, so a trace's sets reach the stores as they would from createLimiter.
import { calendarResolver } from '../../packages/core/src/policies/calendar-set.js'
import type { Trace, TracePolicy, TraceStep } from './traces.js'

/** A store under test: refund is needed; a trace that penalizes or blocks needs those too. */
export type TraceStore = Omit<Store, 'algorithms' | 'calendarPeriods' | 'namedAlgorithms' | 'approximate'> &
  Required<Pick<Store, 'refund'>> & { close?(): Promise<unknown> }

/** A store under test, reading the trace's clock through `now`. */
export type StoreFactory = (now: () => number) => TraceStore

export interface TraceOptions {
  /**
   * The steps of one instant (a step and the advance-0 steps after it) are asked for in the same
   * event-loop turn, without waiting for each other, so a coalescing store decides them in one script call.
   */
  readonly together?: boolean
  /** Runs after every step's answers (a SyncedStore's `flush`, so Redis is part of every decision). */
  readonly afterStep?: (store: TraceStore) => Promise<void>
}

/**
 * Runs one trace on a fresh store and key; one outcome list per step. Calendar periods are
 * resolved at each step's time, as the limiter does; every set used is reset at the end. A store with `close` is closed at the end.
 */
export async function runTrace(
  trace: Trace,
  makeStore: StoreFactory,
  key: string,
  start: number,
  { together = false, afterStep }: TraceOptions = {},
): Promise<(readonly Outcome[])[]> {
  let now = start
  const store = makeStore(() => now)
  let limits = traceSet(trace.limits)
  let resolve = calendarResolver(limits)
  // Every set the trace decided on: a plan change, or a period's turn, leaves a state behind.
  const used = new Set<PolicySet>()
  const setAt = (at: number): PolicySet => {
    const set = resolve === undefined ? limits : resolve(key, at)
    used.add(set)
    return set
  }
  const results: (readonly Outcome[])[] = []
  const { steps } = trace
  try {
    for (let i = 0; i < steps.length; ) {
      now += (steps[i] as TraceStep)[0]
      const answers = []
      do {
        const action = (steps[i] as TraceStep)[1]
        if (typeof action === 'object' && 'plan' in action) {
          limits = traceSet(action.plan)
          resolve = calendarResolver(limits)
        }
        answers.push(ask(store, key, setAt(now), action, now))
        i++
      } while (together && i < steps.length && (steps[i] as TraceStep)[0] === 0)
      results.push(...(await Promise.all(answers)))
      await afterStep?.(store)
    }
  } finally {
    for (const set of used) await store.reset(key, set)
    await store.close?.()
  }
  return results
}

/**
 * The policy set of a trace's limits: parsed as a limiter parses them, then each offset window
 * given its `offset` and an id naming it, as `calendar-set.ts` resolves a period (`<id>@<start>`).
 */
export function traceSet(limits: readonly TracePolicy[]): PolicySet {
  const parsed = parsePolicies(
    limits.map((limit) => (typeof limit === 'object' && 'offset' in limit ? withoutOffset(limit) : limit)),
  )
  const policies = parsed.policies.map((policy, i): Policy => {
    const limit = limits[i] as TracePolicy
    if (typeof limit !== 'object' || !('offset' in limit)) return policy
    if (!(limit.offset >= 0 && limit.offset < limit.window)) {
      throw new Error(`offset ${limit.offset} is outside its window of ${limit.window} ms`)
    }
    return Object.freeze({ ...policy, offset: limit.offset, id: `${policy.id}@${limit.offset}` })
  })
  return policySetOf(policies)
}

function withoutOffset<T extends { offset: number }>({ offset: _, ...rest }: T): Omit<T, 'offset'> {
  return rest
}

/** One step's outcomes; a refund is sent, then a peek shows its effect (sent in that order). */
function ask(
  store: TraceStore,
  key: string,
  set: PolicySet,
  action: TraceStep[1],
  now: number,
): Awaitable<readonly Outcome[]> {
  if (action === 'peek') return store.peek(key, set)
  if (typeof action === 'object' && 'plan' in action) return store.peek(key, set)
  if (typeof action === 'number') return store.consume(key, set, action)
  if ('block' in action) {
    if (store.block === undefined) throw new Error('the trace blocks a key: a store without block() cannot run it')
    const blocked = store.block(key, set, action.block)
    const after = store.peek(key, set)
    return Promise.all([blocked, after]).then(([, outcomes]) => outcomes)
  }
  if ('penalty' in action) {
    if (store.penalize === undefined)
      throw new Error('the trace penalizes a key: a store without penalize() cannot run it')
    const penalized = store.penalize(key, set, action.penalty)
    const after = store.peek(key, set)
    return Promise.all([penalized, after]).then(([, outcomes]) => outcomes)
  }
  const admittedAt = action.ago === undefined ? undefined : now - action.ago
  const refunded = store.refund(key, set, action.refund, admittedAt)
  const after = store.peek(key, set)
  return Promise.all([refunded, after]).then(([, outcomes]) => outcomes)
}

/** The steps where two runs differ, readable in a failure message (empty when identical). */
export function differences(trace: Trace, expected: (readonly Outcome[])[], actual: (readonly Outcome[])[]): string[] {
  const diffs: string[] = []
  for (let i = 0; i < trace.steps.length; i++) {
    const want = JSON.stringify(expected[i])
    const got = JSON.stringify(actual[i])
    if (want !== got) diffs.push(`step ${i} ${JSON.stringify(trace.steps[i])}: expected ${want}, got ${got}`)
  }
  return diffs
}
