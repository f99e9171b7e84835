import type { Policy } from '../policy.js'
import type { Kept, Meter } from './meter.js'
import { admitted, denied, type Outcome, type Refund, type Transition } from './outcome.js'

/**
 * Admission times inside the last window, oldest first, with the cost admitted at each. Memory
 * is O(limit) per key, which is why policies cap sliding-log limits (MAX_SLIDING_LOG_LIMIT).
 */
export interface SlidingLogState {
  readonly times: readonly number[]
  readonly costs: readonly number[]
}

/**
 * As a meter keeps it (see `slidingLogMeter`): entries before `head` are gone; `used` is the cost from `head` on. `costs` is undefined while
 * every admission has cost 1: the log is then one entry per unit (same-millisecond admissions not
 * merged), one array per key rather than two.
 */
interface SlidingLogDeque extends Kept {
  times: number[]
  costs: number[] | undefined
  head: number
  used: number
}

/** A log as `decideSlidingLog` reads it: the transition's state or a meter's deque. */
interface LogView {
  readonly times: readonly number[]
  readonly costs: readonly number[] | undefined
  readonly head?: number
  readonly used?: number
}

/** Entry `i`'s cost; a log without costs holds one entry per unit. */
function costAt(costs: readonly number[] | undefined, i: number): number {
  return costs === undefined ? 1 : (costs[i] as number)
}

/** Entries a meter lets pile up before `head` before it moves the live ones down (at least half the log). */
const COMPACT_AT = 32

/** Exact: admits while the cost admitted in (now − window, now] plus this cost ≤ limit. */
export const slidingLog: Transition<SlidingLogState> = (state, now, policy, cost) => {
  const outcome = decideSlidingLog(state, now, policy, cost)
  if (!outcome.allowed || cost === 0) return { state: state as SlidingLogState, outcome }
  return { state: appended(state, now, policy.window, cost), outcome }
}

/**
 * A new log: the entries of `state` still inside the window, and `cost` at `now` (added to the
 * newest entry when it is at `now`). What an admission writes, and a penalty too.
 */
export function appended(
  state: SlidingLogState | undefined,
  now: number,
  window: number,
  cost: number,
): SlidingLogState {
  const times = state?.times ?? []
  const costs = state?.costs ?? []
  const first = firstLive(times, 0, now - window)
  const nextTimes = times.slice(first)
  const nextCosts = costs.slice(first)
  if (nextTimes.length > 0 && nextTimes[nextTimes.length - 1] === now) {
    nextCosts[nextCosts.length - 1] = (nextCosts[nextCosts.length - 1] as number) + cost
  } else {
    nextTimes.push(now)
    nextCosts.push(cost)
  }
  return { times: nextTimes, costs: nextCosts }
}

/** The index of the first entry from `from` still inside the window (time > `expired`). */
function firstLive(times: readonly number[], from: number, expired: number): number {
  let first = from
  while (first < times.length && (times[first] as number) <= expired) first++
  return first
}

/** The sliding log's outcome (see `slidingLog`), changing nothing; O(1) amortised on a meter's deque. */
function decideSlidingLog(state: LogView | undefined, now: number, policy: Policy, cost: number): Outcome {
  const { limit, window } = policy
  const times = state?.times ?? NONE
  const costs = state === undefined ? NONE : state.costs
  const head = state?.head ?? 0
  const first = firstLive(times, head, now - window)
  let used = 0
  if (state?.used === undefined) {
    for (let i = first; i < times.length; i++) used += costAt(costs, i)
  } else {
    used = state.used
    for (let i = head; i < first; i++) used -= costAt(costs, i)
  }
  const newest = times.length > first ? (times[times.length - 1] as number) : undefined

  if (used + cost > limit) {
    let excess = used + cost - limit
    let i = first
    while (excess > 0) excess -= costAt(costs, i++)
    const leaves = (times[i - 1] as number) + window - now
    return denied(Math.max(0, limit - used), (newest as number) + window - now, leaves)
  }
  if (cost === 0) {
    const nextAfter = used === limit ? leavingAfter(times, costs, first, window, now) : undefined
    return admitted(limit - used, newest === undefined ? 0 : newest + window - now, 0, nextAfter)
  }
  const nextAfter = used + cost === limit ? leavingAfter(times, costs, first, window, now) : undefined
  return admitted(limit - used - cost, window, 0, nextAfter)
}

const NONE: readonly number[] = []

/**
 * When enough of the oldest entries (from `first`) have left the window to free one unit, at
 * least 1 ms; when the log runs out first, the unit is the one being admitted at `now`.
 */
function leavingAfter(
  times: readonly number[],
  costs: readonly number[] | undefined,
  first: number,
  window: number,
  now: number,
): number {
  let excess = 1
  let i = first
  while (excess > 0 && i < times.length) excess -= costAt(costs, i++)
  return Math.max(1, (excess > 0 ? now : (times[i - 1] as number)) + window - now)
}

/**
 * The sliding log on a state kept and changed in place (see `Meter`): a deque with a head
 * index, no copy of the log per request. Expired entries are dropped by moving `head`, and the
 * live ones move down once the dead ones are at least half the log, so each entry is moved at
 * most a few times (O(1) amortised). `decide` and `take` test their
 * common case first and call out for the rest, so that they are small enough for V8 to inline
 * where a store calls them (twice each for two policies).
 */
export const slidingLogMeter: Meter<SlidingLogDeque> = {
  decide(state, now, policy, cost) {
    // The common case, nothing leaving and room to spare, needs only `used`: the newest entry (a
    // line of the log that the admission writes but need not wait for) is not read.
    if (
      state !== undefined &&
      cost > 0 &&
      state.used + cost < policy.limit &&
      oldestStays(state, now - policy.window)
    ) {
      return admitted(policy.limit - state.used - cost, policy.window, 0, undefined)
    }
    return decideSlidingLog(state, now, policy, cost)
  },
  take(live, now, { window }, cost, spare) {
    // The common case, a unit on a log of units: one push, once what left the window is dropped.
    if (live !== undefined && cost === 1 && live.costs === undefined) {
      if (!oldestStays(live, now - window)) dropLeft(live, now - window)
      live.times.push(now)
      live.used += 1
      return live
    }
    return takeKept(live, now, window, cost, spare)
  },
  toState(state) {
    const { times, costs, head } = state
    if (costs !== undefined) {
      return head === 0 ? { times, costs } : { times: times.slice(head), costs: costs.slice(head) }
    }
    return perMillisecond(times, head)
  },
  fromState(state) {
    const { times, costs } = state as SlidingLogState
    let used = 0
    for (const cost of costs) used += cost
    return { times: times.slice(), costs: costs.slice(), head: 0, used, expiry: 0, protectedUntil: 0 }
  },
}

/** Whether the deque's oldest entry is still inside the window (time > `expired`), so that no entry leaves it. */
function oldestStays(state: SlidingLogDeque, expired: number): boolean {
  return state.head < state.times.length && (state.times[state.head] as number) > expired
}

/** `take` on any kept log (or none). */
function takeKept(
  live: SlidingLogDeque | undefined,
  now: number,
  window: number,
  cost: number,
  spare: SlidingLogDeque | undefined,
): SlidingLogDeque {
  if (live === undefined) return takeAfresh(spare, now, window, cost)
  return appendToDeque(live, now, window, cost)
}

/**
 * `take` with no live state: a new one, or a spare (expired or reset, so none of its entries
 * count any more) whose arrays are reused rather than left as old garbage.
 */
function takeAfresh(spare: SlidingLogDeque | undefined, now: number, window: number, cost: number): SlidingLogDeque {
  if (spare === undefined) {
    const times = [now]
    if (cost === 1) return { times, costs: undefined, head: 0, used: 1, expiry: 0, protectedUntil: 0 }
    return { times, costs: [cost], head: 0, used: cost, expiry: 0, protectedUntil: 0 }
  }
  spare.times.length = 0
  spare.costs = undefined
  spare.head = 0
  spare.used = 0
  return appendToDeque(spare, now, window, cost)
}

/**
 * Moves `head` past the entries that left the window (time ≤ `expired`), taking their cost off
 * `used`; empties the log once none is left, and moves the live ones down once the dead are half.
 */
function dropLeft(state: SlidingLogDeque, expired: number): void {
  const { times, costs } = state
  let { head, used } = state
  while (head < times.length && (times[head] as number) <= expired) used -= costAt(costs, head++)
  if (head === times.length) {
    times.length = 0
    if (costs !== undefined) costs.length = 0
    head = 0
  } else if (head >= COMPACT_AT && head * 2 >= times.length) {
    moveDown(times, head)
    if (costs !== undefined) moveDown(costs, head)
    head = 0
  }
  state.head = head
  state.used = used
}

/** `take` on a deque: drops the entries that left the window and appends `cost` at `now`, in place. */
function appendToDeque(state: SlidingLogDeque, now: number, window: number, cost: number): SlidingLogDeque {
  dropLeft(state, now - window)
  let { times, head, costs } = state
  if (costs === undefined && cost !== 1) {
    // The first admission of another cost: from now on each entry carries its cost, one entry
    // per millisecond as the transition keeps them.
    const merged = perMillisecond(times, head)
    times = merged.times as number[]
    costs = merged.costs as number[]
    state.times = times
    state.costs = costs
    head = 0
  }
  const last = times.length - 1
  if (costs === undefined) {
    times.push(now)
  } else if (last >= head && times[last] === now) {
    costs[last] = (costs[last] as number) + cost
  } else {
    times.push(now)
    costs.push(cost)
  }
  state.head = head
  state.used += cost
  return state
}

/**
 * Moves the entries from `from` on to the start and drops the rest. A loop: `copyWithin` takes
 * V8's generic path, about 35 ns an entry against 1 for the loop (250 entries: 8.7 µs against 0.26).
 */
function moveDown(entries: number[], from: number): void {
  const length = entries.length - from
  for (let i = 0; i < length; i++) entries[i] = entries[i + from] as number
  entries.length = length
}

/** A log of one entry per unit (from `head` on), merged per millisecond as the transition keeps it. */
function perMillisecond(times: readonly number[], head: number): SlidingLogState {
  const merged = { times: [] as number[], costs: [] as number[] }
  for (let i = head; i < times.length; i++) {
    const last = merged.times.length - 1
    if (last >= 0 && merged.times[last] === times[i]) merged.costs[last] = (merged.costs[last] as number) + 1
    else {
      merged.times.push(times[i] as number)
      merged.costs.push(1)
    }
  }
  return merged
}

/**
 * Takes the cost off the newest entries still inside the window (dropping emptied ones), never
 * below 0; with `admittedAt`, only off the admission's entry (the newest at or before it), while
 * it is inside the window.
 */
export const refundSlidingLog: Refund<SlidingLogState> = (state, now, policy, cost, admittedAt) => {
  if (state === undefined) return state
  const { times, costs } = state
  const first = firstLive(times, 0, now - policy.window)
  if (first === times.length) return state
  if (admittedAt !== undefined) {
    // The admission's entry: the newest at or before `admittedAt`, a clock read just after it.
    let at = times.length - 1
    while (at >= first && (times[at] as number) > admittedAt) at--
    if (at < first) return state
    const nextTimes = times.slice()
    const nextCosts = costs.slice()
    const kept = (costs[at] as number) - Math.min(cost, costs[at] as number)
    if (kept === 0) {
      nextTimes.splice(at, 1)
      nextCosts.splice(at, 1)
    } else {
      nextCosts[at] = kept
    }
    return { times: nextTimes.slice(first), costs: nextCosts.slice(first) }
  }
  const nextTimes = times.slice(first)
  const nextCosts = costs.slice(first)
  let left = cost
  while (left > 0 && nextCosts.length > 0) {
    const newest = nextCosts.length - 1
    const taken = Math.min(left, nextCosts[newest] as number)
    left -= taken
    if (taken === nextCosts[newest]) {
      nextTimes.pop()
      nextCosts.pop()
    } else {
      nextCosts[newest] = (nextCosts[newest] as number) - taken
    }
  }
  return { times: nextTimes, costs: nextCosts }
}
