import type { Policy } from '../policies/policy.js'
import type { Kept, Meter } from './meter.js'
import {
  admitted,
  alignedStart,
  ceilMs,
  denied,
  ESTIMATE_EPSILON,
  floorUnits,
  type Outcome,
  type Penalty,
  type Refund,
  type Transition,
} from './outcome.js'

/**
 * Counts of the last `precision + 1` sub-windows, oldest first, the last being the one that
 * contains `start`. With precision 1 this is Cloudflare's previous/current counter pair.
 */
export interface SlidingWindowState {
  readonly start: number
  readonly counts: readonly number[]
}

/**
 * As a meter keeps it (see `slidingWindowMeter`): the newest and the oldest sub-windows' counts and
 * their running total as fields, all a decision in the newest sub-window reads and writes, with no
 * other object to load; `older`, the counts of the sub-windows before the newest (oldest first,
 * `oldest` its first), is touched only when a sub-window passes. While every count sits in the
 * newest two sub-windows (most keys see a few requests close together) there is no `older`: the
 * one before the newest holds `total − newest`. The array is made when a third sub-window would
 * hold a count, and then kept. The compact form is for memory: `bench:memory`'s "sluice
 * sliding-window, 1 policy" holds 117 bytes a key with it, 245 without (−52 %; 2 policies 244
 * against 501), 2026-11-26; without it that row ran 8 % fewer instructions per decision
 * (bench/README.md, issue 29).
 */
interface RunningWindow extends Kept {
  start: number
  newest: number
  oldest: number
  total: number
  older: number[] | undefined
}

/**
 * The counts as `decideSlidingWindow` reads them: a meter's state, or a transition's (`viewOf`).
 * Sub-window `precision` is `newest`; those before it are in `older`, or without it only the one
 * before the newest holds any, `total − newest`.
 */
interface Counted {
  readonly start: number
  readonly newest: number
  readonly older: readonly number[] | undefined
  /** The running total of every count; undefined: summed from the counts when needed. */
  readonly total: number | undefined
}

/** No counts at all: a new or expired key. */
const EMPTY: Counted = { start: 0, newest: 0, older: undefined, total: 0 }

/** A transition's state as `decideSlidingWindow` reads it: its array is all the counts, oldest first. */
function viewOf({ start, counts }: SlidingWindowState, precision: number): Counted {
  return { start, newest: counts[precision] ?? 0, older: counts, total: undefined }
}

/**
 * Estimates the count over the last window as the full sub-windows inside it plus the oldest
 * sub-window weighted by the part of it still inside (traffic assumed even within it).
 * Admits while estimate + cost ≤ limit.
 */
export const slidingWindow: Transition<SlidingWindowState> = (state, now, policy, cost) => {
  const outcome = decideSlidingWindow(state && viewOf(state, policy.precision), now, policy, cost)
  if (!outcome.allowed || cost === 0) return { state: state as SlidingWindowState, outcome }
  const { precision } = policy
  const size = policy.window / precision
  const start = now - (now % size)
  const counts = shifted(state, start, size, policy)
  counts[precision] = (counts[precision] as number) + cost
  return { state: { start, counts }, outcome }
}

/**
 * The sliding window's outcome (see `slidingWindow`), changing nothing. The estimate is the
 * oldest sub-window's weighted part plus the whole count of the others, summed as integers
 * first (as the Lua mirror does), so a running total gives the same float as a loop would.
 */
function decideSlidingWindow(
  state: Counted | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  const { limit, precision } = policy
  const size = policy.window / precision
  const start = alignedStart(now, size, state?.start)
  // A clock that steps back (NTP) must not read past the stored counts: treat it as no time passed.
  // Starts are multiples of `size`, so the shift is a whole number of sub-windows.
  const shift = state === undefined ? precision + 1 : shiftOf(state.start, start, size, policy)
  const counts = state ?? EMPTY
  let total = 0
  if (shift <= precision) {
    if (counts.total === undefined) {
      for (let i = shift; i <= precision; i++) total += countIn(counts, precision, i)
    } else {
      // The running total less the sub-windows that slid out: O(1) per sub-window passed.
      total = counts.total
      for (let i = 0; i < shift; i++) total -= countIn(counts, precision, i)
    }
  }
  const oldest = shift <= precision ? countIn(counts, precision, shift) : 0
  const left = start + size - now
  const estimate = (oldest * left) / size + (total - oldest)

  if (estimate + cost > limit + ESTIMATE_EPSILON) {
    const wait = timeUntilBelow(counts, shift, 0, precision, left, size, estimate + cost - limit)
    const resetAfter = resetAfterOf(counts, shift, 0, precision, left, size)
    return denied(floorUnits(limit - estimate), resetAfter, wait, label)
  }
  const remaining = floorUnits(limit - estimate - cost)
  const nextAfter =
    remaining === 0
      ? Math.max(1, timeUntilBelow(counts, shift, cost, precision, left, size, estimate + cost + 1 - limit))
      : undefined
  return admitted(remaining, resetAfterOf(counts, shift, cost, precision, left, size), 0, nextAfter, label)
}

/** The count of sub-window `i` (0 the oldest, `precision` the newest). */
function countIn({ newest, older, total }: Counted, precision: number, i: number): number {
  if (i === precision) return newest
  if (older !== undefined) return older[i] ?? 0
  return i === precision - 1 ? (total as number) - newest : 0
}

/**
 * The sliding window on a state kept and changed in place (see `Meter`): the counts move down
 * only when a sub-window has passed, and the running total makes the estimate O(1) whatever
 * the precision.
 */
export const slidingWindowMeter: Meter<RunningWindow> = {
  decide(state, now, policy, cost, label) {
    // The common case inline, from the state's fields alone: still in the stored sub-window, the
    // newest sub-window holding counts, quota to spare. The same floats in the same order as
    // `decideSlidingWindow` with no sub-window passed; an empty oldest sub-window (a key younger
    // than its window, or a quiet one) weighs 0 without a division.
    if (state !== undefined) {
      const { start, newest, oldest, total } = state
      const { limit, precision } = policy
      const size = policy.window / precision
      if (now >= start && now - start < size && newest + cost > 0) {
        const left = start + size - now
        const weighted = oldest === 0 ? 0 : (oldest * left) / size
        const remaining = floorUnits(limit - (weighted + (total - oldest)) - cost)
        if (remaining >= 1) return admitted(remaining, left + precision * size, 0, undefined, label)
      }
    }
    return decideSlidingWindow(state, now, policy, cost, label)
  },
  take(state, now, policy, cost, spare) {
    const { precision } = policy
    const size = policy.window / precision
    const start = alignedStart(now, size, state?.start)
    if (state === undefined) {
      if (spare === undefined) return runningWindow(start, cost, 0, cost, undefined)
      // A spare keeps its form: an array it has is reused rather than left as old garbage.
      spare.older?.fill(0)
      spare.start = start
      spare.newest = cost
      spare.oldest = 0
      spare.total = cost
      return spare
    }
    const shift = shiftOf(state.start, start, size, policy)
    if (shift > 0) slide(state, shift, precision)
    state.start = start
    state.newest += cost
    state.total += cost
    return state
  },
  toState({ start, newest, total, older }, { precision }) {
    if (older !== undefined) return { start, counts: [...older, newest] }
    const counts = new Array<number>(precision + 1).fill(0)
    counts[precision - 1] = total - newest
    counts[precision] = newest
    return { start, counts }
  },
  fromState(state) {
    const { start, counts } = state as SlidingWindowState
    const precision = counts.length - 1
    let total = 0
    let compact = true
    for (let i = 0; i <= precision; i++) {
      total += counts[i] as number
      if (i < precision - 1 && counts[i] !== 0) compact = false
    }
    const older = compact ? undefined : counts.slice(0, precision)
    return runningWindow(start, counts[precision] as number, counts[0] as number, total, older)
  },
}

/** A meter's state, every one made here so that all share one shape. */
function runningWindow(
  start: number,
  newest: number,
  oldest: number,
  total: number,
  older: number[] | undefined,
): RunningWindow {
  return { start, newest, oldest, total, older, expiry: 0, protectedUntil: 0 }
}

/**
 * Moves a meter's counts `shift` (≥ 1) sub-windows on, the newest then empty, and drops what slid
 * out of the window from the total: O(precision) once per sub-window passed.
 */
function slide(state: RunningWindow, shift: number, precision: number): void {
  const { newest } = state
  let { older } = state
  if (shift > precision) {
    older?.fill(0)
    state.newest = 0
    state.oldest = 0
    state.total = 0
    return
  }
  if (older === undefined) {
    const previous = state.total - newest
    // Still without an array if, after the shift, no count lands below the newest two sub-windows.
    if ((newest === 0 || shift === 1) && (previous === 0 || shift === precision)) {
      const kept = shift === 1 ? newest : 0
      state.newest = 0
      state.oldest = precision === 1 ? kept : 0
      state.total = kept
      return
    }
    older = new Array<number>(precision).fill(0)
    older[precision - 1] = previous
    state.older = older
  }
  // Loops: copyWithin and fill cost more than they move for a few dozen counts.
  for (let i = 0; i < shift; i++) state.total -= older[i] as number
  for (let i = 0; i < precision; i++) {
    const from = i + shift
    older[i] = from < precision ? (older[from] as number) : from === precision ? newest : 0
  }
  state.newest = 0
  state.oldest = older[0] as number
}

/**
 * Takes the cost off the newest sub-windows still holding counts, newest first, never below 0:
 * counts that have slid out of the window are gone and give nothing back. With `admittedAt`,
 * only off the sub-window the request counted in (the newest one at or before `admittedAt`, a
 * clock read just after the admission), while it is still inside the window. The
 * state keeps its `start`, so a store that writes a same-start state in place (Redis) keeps a
 * correct expiry.
 */
export const refundSlidingWindow: Refund<SlidingWindowState> = (state, now, policy, cost, admittedAt) => {
  if (state === undefined) return state
  const size = policy.window / policy.precision
  const start = now - (now % size)
  // Indices below `shift` have slid out; a clock that stepped back shifts nothing.
  const shift = Math.max(0, (start - state.start) / size)
  const counts = state.counts.slice()
  // The newest index to take from, and the oldest (the admission's sub-window, when known).
  let newest = counts.length - 1
  let oldest = shift
  if (admittedAt !== undefined) {
    // `admittedAt` is read just after the admission: past the newest sub-window it means the newest.
    const index = Math.min(newest, newest - (state.start - (admittedAt - (admittedAt % size))) / size)
    if (index < shift) return state
    newest = index
    oldest = index
  }
  let left = cost
  for (let i = newest; i >= oldest && left > 0; i--) {
    const taken = Math.min(left, counts[i] as number)
    counts[i] = (counts[i] as number) - taken
    left -= taken
  }
  return left === cost ? state : { start: state.start, counts }
}

/**
 * Sub-windows passed from `from` (a state's start) to `to` (both aligned starts). Most decisions
 * land in the same sub-window as the last: no division, and no clock-step check, then. A clock
 * that stepped back passes none (its counts stay where they are, as if no time passed); a state
 * more than a window ahead comes from a clock that stepped back (or a glitch forward) and reads as
 * no state (every sub-window passed), so such a step costs at most about a window.
 */
function shiftOf(from: number, to: number, size: number, { window, precision }: Policy): number {
  if (to === from) return 0
  return from - to > window ? precision + 1 : Math.max(0, (to - from) / size)
}

/** A new array of the counts as seen from the sub-window starting at `start`. */
function shifted(state: SlidingWindowState | undefined, start: number, size: number, policy: Policy): number[] {
  const { precision } = policy
  const shift = state === undefined ? precision + 1 : shiftOf(state.start, start, size, policy)
  // Native copies: most decisions land in the sub-window of the last one (shift 0).
  const counts = shift > precision ? [] : (state as SlidingWindowState).counts.slice(shift)
  while (counts.length <= precision) counts.push(0)
  return counts
}

/** The count of sub-window `i` (0 the oldest) seen `shift` sub-windows on, with `extra` in the newest. */
function countAt(counts: Counted, shift: number, extra: number, precision: number, i: number): number {
  const count = i + shift <= precision ? countIn(counts, precision, i + shift) : 0
  return i === precision ? count + extra : count
}

/**
 * The estimate falls linearly while the oldest sub-window slides out, then the next one starts
 * sliding out: walk those segments until `excess` has drained.
 */
function timeUntilBelow(
  counts: Counted,
  shift: number,
  extra: number,
  precision: number,
  left: number,
  size: number,
  excess: number,
): number {
  let elapsed = 0
  let need = excess
  for (let i = 0; i <= precision; i++) {
    const count = countAt(counts, shift, extra, precision, i)
    const span = i === 0 ? left : size
    const drop = (count * span) / size
    if (count > 0 && drop >= need - ESTIMATE_EPSILON) return ceilMs(elapsed + (need * size) / count)
    need -= drop
    elapsed += span
  }
  return ceilMs(elapsed)
}

function resetAfterOf(
  counts: Counted,
  shift: number,
  extra: number,
  precision: number,
  left: number,
  size: number,
): number {
  for (let i = precision; i >= 0; i--) {
    if (countAt(counts, shift, extra, precision, i) > 0) return i === 0 ? left : left + i * size
  }
  return 0
}

/** The cost goes to the newest sub-window, whatever the limit (see `Penalty`). */
export const penalizeSlidingWindow: Penalty<SlidingWindowState> = (state, now, { window, precision }, cost) => {
  const size = window / precision
  const start = now - (now % size)
  const shift = state === undefined ? precision + 1 : Math.max(0, (start - state.start) / size)
  const counts: number[] = []
  for (let i = 0; i <= precision; i++) {
    counts.push(i + shift <= precision ? ((state as SlidingWindowState).counts[i + shift] as number) : 0)
  }
  counts[precision] = (counts[precision] as number) + cost
  return { start, counts }
}
