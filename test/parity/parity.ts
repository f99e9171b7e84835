import { type Outcome, parsePolicies, type Store } from '@sluice/core'
import type { Trace } from './traces.js'

/** A store under test, reading the trace's clock through `now`. */
export type StoreFactory = (now: () => number) => Required<Store>

/** Runs one trace on a fresh store and key; one outcome list per step. */
export async function runTrace(
  trace: Trace,
  makeStore: StoreFactory,
  key: string,
  start: number,
): Promise<(readonly Outcome[])[]> {
  let now = start
  const store = makeStore(() => now)
  const set = parsePolicies(trace.limits)
  const results: (readonly Outcome[])[] = []
  try {
    for (const [advance, action] of trace.steps) {
      now += advance
      if (typeof action === 'object') {
        await store.refund(key, set, action.refund)
        results.push(await store.peek(key, set))
      } else {
        results.push(await (action === 'peek' ? store.peek(key, set) : store.consume(key, set, action)))
      }
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
