import { type Policy, type PolicySet, parsePolicies } from '@sluice/core'
import { type Awaitable, type Outcome, policySetOf, type Store } from '@sluice/core/store'
import type { Trace, TracePolicy, TraceStep } from './traces.js'

/** A store under test, reading the trace's clock through `now`. */
export type StoreFactory = (
  now: () => number,
) => Required<Omit<Store, 'algorithms' | 'calendarPeriods' | 'namedAlgorithms' | 'approximate'>>

/**
 * Runs one trace on a fresh store and key; one outcome list per step. With `together`, the steps
 * of one instant (a step and the advance-0 steps after it) are asked for in the same event-loop
 * turn, without waiting for each other, so a coalescing store decides them in one script call.
 */
export async function runTrace(
  trace: Trace,
  makeStore: StoreFactory,
  key: string,
  start: number,
  { together = false } = {},
): Promise<(readonly Outcome[])[]> {
  let now = start
  const store = makeStore(() => now)
  let set = traceSet(trace.limits)
  // Every set the trace decided on: a plan change to another period's window leaves a state behind.
  const sets = [set]
  const results: (readonly Outcome[])[] = []
  const { steps } = trace
  try {
    for (let i = 0; i < steps.length; ) {
      now += (steps[i] as TraceStep)[0]
      const answers = []
      do {
        const action = (steps[i] as TraceStep)[1]
        if (typeof action === 'object' && 'plan' in action) {
          set = traceSet(action.plan)
          sets.push(set)
        }
        answers.push(ask(store, key, set, action, now))
        i++
      } while (together && i < steps.length && (steps[i] as TraceStep)[0] === 0)
      results.push(...(await Promise.all(answers)))
    }
  } finally {
    for (const used of sets) await store.reset(key, used)
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
  store: Required<Omit<Store, 'algorithms' | 'calendarPeriods' | 'namedAlgorithms' | 'approximate'>>,
  key: string,
  set: PolicySet,
  action: TraceStep[1],
  now: number,
): Awaitable<readonly Outcome[]> {
  if (action === 'peek') return store.peek(key, set)
  if (typeof action === 'object' && 'plan' in action) return store.peek(key, set)
  if (typeof action === 'number') return store.consume(key, set, action)
  if ('block' in action) {
    const blocked = store.block(key, set, action.block)
    const after = store.peek(key, set)
    return Promise.all([blocked, after]).then(([, outcomes]) => outcomes)
  }
  if ('penalty' in action) {
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
