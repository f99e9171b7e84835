import { type Outcome, parsePolicies, type Store } from '@sluice/core'
import type { Trace, TraceStep } from './traces.js'

/** A store under test, reading the trace's clock through `now`. */
export type StoreFactory = (now: () => number) => Store

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
  const set = parsePolicies(trace.limits)
  const results: (readonly Outcome[])[] = []
  const { steps } = trace
  try {
    for (let i = 0; i < steps.length; ) {
      now += (steps[i] as TraceStep)[0]
      const answers = []
      do {
        const action = (steps[i] as TraceStep)[1]
        answers.push(action === 'peek' ? store.peek(key, set) : store.consume(key, set, action))
        i++
      } while (together && i < steps.length && (steps[i] as TraceStep)[0] === 0)
      results.push(...(await Promise.all(answers)))
    }
  } finally {
    await store.reset(key, set)
  }
  return results
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
