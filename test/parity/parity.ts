import { type PolicySet, parsePolicies } from '@sluice/core'
import type { Awaitable, Outcome, Store } from '@sluice/core/store'
// The limiter's own resolution of calendar periods, so a trace's sets reach the stores as they would from createLimiter.
import { calendarResolver } from '../../packages/core/src/calendar-set.js'
import type { Trace, TraceStep } from './traces.js'

/** A store under test: refund is needed; a trace that penalizes or blocks needs those too. */
export type TraceStore = Omit<Store, 'algorithms' | 'calendarPeriods' | 'namedAlgorithms'> &
  Required<Pick<Store, 'refund'>> & { close?(): Promise<void> }

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
 * resolved at each step's time, as the limiter does. A store with `close` is closed at the end.
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
  let limits = parsePolicies(trace.limits)
  let resolve = calendarResolver(limits)
  const setAt = (at: number): PolicySet => (resolve === undefined ? limits : resolve(key, at))
  const results: (readonly Outcome[])[] = []
  const { steps } = trace
  try {
    for (let i = 0; i < steps.length; ) {
      now += (steps[i] as TraceStep)[0]
      const answers = []
      do {
        const action = (steps[i] as TraceStep)[1]
        if (typeof action === 'object' && 'plan' in action) {
          limits = parsePolicies(action.plan)
          resolve = calendarResolver(limits)
        }
        answers.push(ask(store, key, setAt(now), action, now))
        i++
      } while (together && i < steps.length && (steps[i] as TraceStep)[0] === 0)
      results.push(...(await Promise.all(answers)))
      await afterStep?.(store)
    }
  } finally {
    await store.reset(key, setAt(now))
    await store.close?.()
  }
  return results
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
