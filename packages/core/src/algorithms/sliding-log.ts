import type { Policy } from '../policies/policy.js'
import type { Kept, Meter } from './meter.js'
import { admitted, denied, type Outcome, type Penalty, type Refund, type Transition } from './outcome.js'

/**
 * Admission times inside the last window, oldest first, with the cost admitted at each. Memory
 * is O(limit) per key, which is why policies cap sliding-log limits (MAX_SLIDING_LOG_LIMIT).
 */
export interface SlidingLogState {
  readonly times: readonly number[]
  readonly costs: readonly number[]
}

/**
 * As a meter keeps it (see `slidingLogMeter`): a log of one entry (most keys see one request per
 * window) without arrays, or the deque, made when a second entry is added and then kept. The
 * one-entry form is for memory: `bench:memory`'s "sluice sliding-log, 1 policy" holds 93 bytes a
 * key with it, 168 without (−45 %; 2 policies 196 against 341), 2026-11-26; without it that row
 * ran 4 % fewer instructions per decision (bench/README.md, issue 29).
 */
type SlidingLogDeque = OneEntry | LogArrays

/** A log of one entry: its time and cost, and no fields the deque needs (the object is smaller). */
interface OneEntry extends Kept {
  times: number
  used: number
}

/**
 * Entries before `head` are gone; `used` is the cost from `head` on. `costs` is undefined while
 * every admission has cost 1: the log is then one entry per unit (same-millisecond admissions not
 * merged), one array per key rather than two.
 */
interface LogArrays extends Kept {
  times: number[]
  costs: number[] | undefined
  head: number
  used: number
}

function isOne(state: SlidingLogDeque): state is OneEntry {
  return typeof state.times === 'number'
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
  const first = state === undefined || ahead(state, now, window) ? times.length : firstLive(times, 0, now - window)
  const nextTimes = times.slice(first)
  const nextCosts = costs.slice(first)
  // Entries stamped after now (the clock stepped back) become one entry at now, as the Lua
  // mirror restamps them: a log is never written later than the request's now.
  let later = nextTimes.length
  while (later > 0 && (nextTimes[later - 1] as number) > now) later--
  if (later < nextTimes.length) {
    let moved = 0
    for (let i = later; i < nextCosts.length; i++) moved += nextCosts[i] as number
    nextTimes.length = later
    nextCosts.length = later
    nextTimes.push(now)
    nextCosts.push(moved)
  }
  if (nextTimes.length > 0 && nextTimes[nextTimes.length - 1] === now) {
    nextCosts[nextCosts.length - 1] = (nextCosts[nextCosts.length - 1] as number) + cost
  } else {
    nextTimes.push(now)
    nextCosts.push(cost)
  }
  return { times: nextTimes, costs: nextCosts }
}

/**
 * Whether a log's newest entry lies more than a window after `now`: it was stamped by a clock
 * that has since stepped back (or glitched forward), and the log reads as no log, so such a step
 * costs at most about a window (as the sliding window's `ahead`). Entries up to a window ahead
 * count where they are; the next append restamps them at now.
 */
function ahead(state: LogView, now: number, window: number): boolean {
  const { times } = state
  return times.length > (state.head ?? 0) && (times[times.length - 1] as number) - now > window
}

/** The index of the first entry from `from` still inside the window (time > `expired`). */
function firstLive(times: readonly number[], from: number, expired: number): number {
  let first = from
  while (first < times.length && (times[first] as number) <= expired) first++
  return first
}

/** The sliding log's outcome (see `slidingLog`), changing nothing; O(1) amortised on a meter's deque. */
function decideSlidingLog(
  state: LogView | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  const { limit, window } = policy
  if (state !== undefined && ahead(state, now, window)) return decideSlidingLog(undefined, now, policy, cost, label)
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
    return denied(Math.max(0, limit - used), (newest as number) + window - now, leaves, label)
  }
  if (cost === 0) {
    const nextAfter = used === limit ? leavingAfter(times, costs, first, window, now) : undefined
    return admitted(limit - used, newest === undefined ? 0 : newest + window - now, 0, nextAfter, label)
  }
  const nextAfter = used + cost === limit ? leavingAfter(times, costs, first, window, now) : undefined
  return admitted(limit - used - cost, window, 0, nextAfter, label)
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
 * The outcome `decideSlidingLog` gives for a log of one entry, at `time` with cost `held`: the
 * same arithmetic on the same values, without its loops.
 */
function decideOne(time: number, held: number, now: number, policy: Policy, cost: number, label?: Policy): Outcome {
  const { limit, window } = policy
  if (time <= now - window) return decideSlidingLog(undefined, now, policy, cost, label)
  if (held + cost > limit) {
    // The excess left after this entry leaves: more than the log holds gives no time (as the loop).
    const leaves = held + cost - limit - held > 0 ? Number.NaN : time + window - now
    return denied(Math.max(0, limit - held), time + window - now, leaves, label)
  }
  // `held` is 0 only after a store's consume of cost 0; then the unit freed is the one admitted now.
  const leaving = Math.max(1, (1 - held > 0 ? now : time) + window - now)
  if (cost === 0) {
    return admitted(limit - held, time + window - now, 0, held === limit ? leaving : undefined, label)
  }
  return admitted(limit - held - cost, window, 0, held + cost === limit ? leaving : undefined, label)
}

/**
 * The sliding log on a state kept and changed in place (see `Meter`): a deque with a head
 * index, no copy of the log per request. Expired entries are dropped by moving `head`, and the
 * live ones move down once the dead ones are at least half the log, so each entry is moved at
 * most a few times (O(1) amortised). A log of one entry is kept without arrays (`OneEntry`);
 * `take` returns a new object when a second entry makes them. `decide` and `take` test their
 * common case first and call out for the rest, so that they are small enough for V8 to inline
 * where a store calls them (twice each for two policies).
 */
export const slidingLogMeter: Meter<SlidingLogDeque> = {
  decide(state, now, policy, cost, label) {
    // The common case, nothing leaving, room to spare and no clock step: `used`, the oldest entry
    // and the newest.
    if (
      state !== undefined &&
      !isOne(state) &&
      cost > 0 &&
      state.used + cost < policy.limit &&
      oldestStays(state, now - policy.window) &&
      (state.times[state.times.length - 1] as number) <= now
    ) {
      return admitted(policy.limit - state.used - cost, policy.window, 0, undefined, label)
    }
    return decideKept(state, now, policy, cost, label)
  },
  take(live, now, { window }, cost, spare) {
    // The common case, a unit on a log of units: one push, once what left the window is dropped.
    if (
      live !== undefined &&
      !isOne(live) &&
      cost === 1 &&
      live.costs === undefined &&
      (live.times[live.times.length - 1] as number) <= now
    ) {
      if (!oldestStays(live, now - window)) dropLeft(live, now - window)
      live.times.push(now)
      live.used += 1
      return live
    }
    return takeKept(live, now, window, cost, spare)
  },
  toState(state) {
    if (isOne(state)) return { times: [state.times], costs: [state.used] }
    const { times, costs, head } = state
    if (costs !== undefined) {
      return head === 0 ? { times, costs } : { times: times.slice(head), costs: costs.slice(head) }
    }
    return perMillisecond(times, head)
  },
  fromState(state) {
    const { times, costs } = state as SlidingLogState
    if (times.length === 1) {
      return { times: times[0] as number, used: costs[0] as number, expiry: 0, protectedUntil: 0 }
    }
    let used = 0
    for (const cost of costs) used += cost
    return { times: times.slice(), costs: costs.slice(), head: 0, used, expiry: 0, protectedUntil: 0 }
  },
}

/** Whether the deque's oldest entry is still inside the window (time > `expired`), so that no entry leaves it. */
function oldestStays(state: LogArrays, expired: number): boolean {
  return state.head < state.times.length && (state.times[state.head] as number) > expired
}

/** `decide` on any kept log (or none). */
function decideKept(
  state: SlidingLogDeque | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  if (state !== undefined && isOne(state)) {
    // A log more than a window ahead (see `ahead`) reads as no log.
    if (state.times - now > policy.window) return decideSlidingLog(undefined, now, policy, cost, label)
    return decideOne(state.times, state.used, now, policy, cost, label)
  }
  return decideSlidingLog(state, now, policy, cost, label)
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
  // A log more than a window ahead (see `ahead`) is reused as a spare: none of it counts.
  if (isOne(live) ? live.times - now > window : ahead(live, now, window)) return takeAfresh(live, now, window, cost)
  return isOne(live) ? takeOne(live, now, window, cost) : appendToDeque(live, now, window, cost)
}

/**
 * `take` with no live state: a new one, or a spare (expired or reset, so none of its entries
 * count any more) that keeps its form, so that arrays it has are reused rather than left as old
 * garbage.
 */
function takeAfresh(spare: SlidingLogDeque | undefined, now: number, window: number, cost: number): SlidingLogDeque {
  if (spare === undefined) return { times: now, used: cost, expiry: 0, protectedUntil: 0 }
  if (isOne(spare)) {
    spare.times = now
    spare.used = cost
    return spare
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
function dropLeft(state: LogArrays, expired: number): void {
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
function appendToDeque(state: LogArrays, now: number, window: number, cost: number): LogArrays {
  dropLeft(state, now - window)
  restampLater(state, now)
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
 * Entries stamped after `now` (the clock stepped back) are stamped `now`, as `appended` and the
 * Lua mirror do: one entry per unit each, or one entry at `now` holding their costs.
 */
function restampLater(state: LogArrays, now: number): void {
  const { times, costs, head } = state
  let later = times.length
  while (later > head && (times[later - 1] as number) > now) later--
  if (later === times.length) return
  if (costs === undefined) {
    for (let i = later; i < times.length; i++) times[i] = now
    return
  }
  let moved = 0
  for (let i = later; i < costs.length; i++) moved += costs[i] as number
  times.length = later
  costs.length = later
  times.push(now)
  costs.push(moved)
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
 * `take` on a log of one entry: an expired entry is replaced and one at `now` takes the cost, in
 * place; a second entry makes the deque (one entry per unit while every cost is 1), a new object.
 */
function takeOne(state: OneEntry, now: number, window: number, cost: number): SlidingLogDeque {
  const { used: held } = state
  // An entry stamped after now (the clock stepped back) is restamped now, as `appended` does.
  const time = Math.min(state.times, now)
  if (time <= now - window) {
    state.times = now
    state.used = cost
    return state
  }
  const units = held === 1 && cost === 1
  if (time === now && !units) {
    state.times = now
    state.used = held + cost
    return state
  }
  // Made with one entry and grown by a push, as a new key's arrays were before this form: a busy
  // key's arrays get the capacity they had (a literal of two would grow to more).
  const times = [time]
  times.push(now)
  if (units) return { times, costs: undefined, head: 0, used: 2, expiry: 0, protectedUntil: 0 }
  const costs = [held]
  costs.push(cost)
  return { times, costs, head: 0, used: held + cost, expiry: 0, protectedUntil: 0 }
}

/**
 * Takes the cost off the newest entries still inside the window (dropping emptied ones), never
 * below 0; with `admittedAt`, only off the admission's entry (the newest at or before it), while
 * it is inside the window.
 */
export const refundSlidingLog: Refund<SlidingLogState> = (state, now, policy, cost, admittedAt) => {
  if (state === undefined || ahead(state, now, policy.window)) return state
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

/** An entry of `cost` at now, whatever the limit (see `Penalty`). */
export const penalizeSlidingLog: Penalty<SlidingLogState> = (state, now, { window }, cost) =>
  appended(state, now, window, cost)
