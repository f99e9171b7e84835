/**
 * Runs a trace through a store on a simulated clock and holds every decision against an exact
 * sliding log kept over the requests that same store admitted: would the log have admitted this
 * request, given what was admitted before it? Any Store can be measured (`StoreUnderTest`): the
 * memory store runs the real transitions; a store spread over processes (SyncedStore) plugs in
 * the same way, its over-admission adding to the algorithm's own.
 */
import { MemoryStore, type PolicyInput, type PolicySet, parsePolicies } from '@sluice/core'
import type { Outcome, Store } from '@sluice/core/store'
import type { Trace } from './traces.js'

export interface StoreUnderTest {
  readonly name: string
  /** A fresh store whose clock is `now` (simulated epoch ms); called once per trace and policy. */
  make(now: () => number): Store
  /** Called after the trace, for stores that hold connections or timers. */
  close?(store: Store): void | Promise<void>
}

export const memoryStore: StoreUnderTest = {
  name: 'MemoryStore',
  make: (now) => new MemoryStore({ now, maxKeys: 1_000_000 }),
}

export interface Accuracy {
  readonly decisions: number
  readonly admitted: number
  /** Admitted, though the exact log over the same admitted history would have denied. */
  readonly allowedPast: number
  /** Denied, though the exact log would have admitted. */
  readonly deniedUnder: number
  /** Decisions for clients offered at most the limit, and how many of those differed. */
  readonly quietDecisions: number
  readonly quietDiffering: number
  /** The most admitted for one client in any (t − window, t], and that as a multiple of the limit. */
  readonly maxInWindow: number
  readonly maxInWindowRatio: number
  /** Clients offered more than the limit: admitted per window ÷ limit, mean and highest. */
  readonly overClients: number
  readonly overAdmittedMean: number
  readonly overAdmittedMax: number
}

/** Trace time 0 sits here: aligned to every window the bench uses, as wall clocks rarely are not. */
const EPOCH = 1_700_000_000_000

/** A client's admitted times in the trailing window, oldest first (cost is always 1). */
class Log {
  times: number[] = []
  head = 0
  countSince(after: number): number {
    while (this.head < this.times.length && (this.times[this.head] as number) <= after) this.head++
    if (this.head > 4096) {
      this.times = this.times.slice(this.head)
      this.head = 0
    }
    return this.times.length - this.head
  }
}

/** Decides every request of the trace, in time order across clients, for one policy on one store. */
export async function measure(
  trace: Trace,
  policy: PolicyInput,
  under: StoreUnderTest = memoryStore,
): Promise<Accuracy> {
  const set: PolicySet = parsePolicies([policy])
  const { limit, window } = set.policies[0] as { limit: number; window: number }
  const events = mergedEvents(trace)
  let clock = EPOCH
  const store = under.make(() => clock)
  const logs = trace.clients.map(() => new Log())
  const admittedBy = new Float64Array(trace.clients.length)
  let decisions = 0
  let admitted = 0
  let allowedPast = 0
  let deniedUnder = 0
  let maxInWindow = 0
  let quietDecisions = 0
  let quietDiffering = 0
  const quiet = trace.clients.map((c) => c.rate <= 1)
  for (let e = 0; e < events.length; e += 2) {
    const at = events[e] as number
    const client = events[e + 1] as number
    clock = EPOCH + at
    const log = logs[client] as Log
    const inWindow = log.countSince(at - window)
    const exact = inWindow + 1 <= limit
    const result = store.consume(trace.clients[client]?.key as string, set, 1)
    const outcomes = (result instanceof Promise ? await result : result) as readonly Outcome[]
    const allowed = (outcomes[0] as Outcome).allowed
    decisions++
    if (allowed && !exact) allowedPast++
    if (!allowed && exact) deniedUnder++
    if (quiet[client]) {
      quietDecisions++
      if (allowed !== exact) quietDiffering++
    }
    if (allowed) {
      admitted++
      admittedBy[client] = (admittedBy[client] as number) + 1
      log.times.push(at)
      if (inWindow + 1 > maxInWindow) maxInWindow = inWindow + 1
    }
  }
  await under.close?.(store)

  const windows = trace.duration / window
  const over = trace.clients.flatMap((c, i) => (c.rate > 1 ? [(admittedBy[i] as number) / windows / limit] : []))
  return {
    decisions,
    admitted,
    allowedPast,
    deniedUnder,
    quietDecisions,
    quietDiffering,
    maxInWindow,
    maxInWindowRatio: maxInWindow / limit,
    overClients: over.length,
    overAdmittedMean: over.length === 0 ? Number.NaN : over.reduce((a, b) => a + b, 0) / over.length,
    overAdmittedMax: over.length === 0 ? Number.NaN : Math.max(...over),
  }
}

/** [time, client, time, client, …] over all clients, by time (ties by client, stably). */
export function mergedEvents(trace: Trace): Float64Array {
  const total = trace.clients.reduce((sum, c) => sum + c.times.length, 0)
  const order = new Float64Array(total)
  let i = 0
  // Time × 2^20 + client sorts as a number: exact while time < 2^32 ms and clients < 2^20.
  trace.clients.forEach((c, client) => {
    for (const t of c.times) order[i++] = t * 1_048_576 + client
  })
  order.sort()
  const events = new Float64Array(2 * total)
  for (let j = 0; j < total; j++) {
    const v = order[j] as number
    const client = v % 1_048_576
    events[2 * j] = (v - client) / 1_048_576
    events[2 * j + 1] = client
  }
  return events
}

/**
 * One client's admissions over time for the plot: the trailing window's admitted count after
 * each request, and the requests it offered, on the same store and clock as `measure`.
 */
export async function admittedSeries(
  times: readonly number[],
  policy: PolicyInput,
  under: StoreUnderTest = memoryStore,
): Promise<{ at: number; inWindow: number; allowed: boolean }[]> {
  const set = parsePolicies([policy])
  const { window } = set.policies[0] as { window: number }
  let clock = EPOCH
  const store = under.make(() => clock)
  const log = new Log()
  const series: { at: number; inWindow: number; allowed: boolean }[] = []
  for (const at of times) {
    clock = EPOCH + at
    const result = store.consume('plot', set, 1)
    const outcomes = (result instanceof Promise ? await result : result) as readonly Outcome[]
    const allowed = (outcomes[0] as Outcome).allowed
    if (allowed) log.times.push(at)
    series.push({ at, inWindow: log.countSince(at - window), allowed })
  }
  await under.close?.(store)
  return series
}
