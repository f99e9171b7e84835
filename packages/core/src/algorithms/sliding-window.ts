import type { Policy } from '../policy.js'
import type { Kept, Meter } from './meter.js'
import {
  admitted,
  alignedStart,
  ceilMs,
  denied,
  floorUnits,
  type Outcome,
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
 * As a meter keeps it (see `slidingWindowMeter`): the counts and their running total. While every
 * count sits in the newest two sub-windows (most keys see a few requests close together), `counts`
 * is the newest one's count and the other is `total − counts`: no array per key. The array of
 * `precision + 1` counts is made when a third sub-window would hold one, and then kept.
 */
interface RunningWindow extends Kept {
  start: number
  counts: number[] | number
  total: number
}

/** Counts as `decideSlidingWindow` reads them: a transition's array, or a meter's compact form. */
type Counts = readonly number[] | number

/**
 * Estimates the count over the last window as the full sub-windows inside it plus the oldest
 * sub-window weighted by the part of it still inside (traffic assumed even within it).
 * Admits while estimate + cost ≤ limit.
 */
export const slidingWindow: Transition<SlidingWindowState> = (state, now, policy, cost) => {
  const outcome = decideSlidingWindow(state, now, policy, cost)
  if (!outcome.allowed || cost === 0) return { state: state as SlidingWindowState, outcome }
  const { precision } = policy
  const size = policy.window / precision
  const start = now - (now % size)
  const counts = shifted(state, start, size, precision)
  counts[precision] = (counts[precision] as number) + cost
  return { state: { start, counts }, outcome }
}

/**
 * The sliding window's outcome (see `slidingWindow`), changing nothing. The estimate is the
 * oldest sub-window's weighted part plus the whole count of the others, summed as integers
 * first (as the Lua mirror does), so a running total gives the same float as a loop would.
 */
function decideSlidingWindow(
  state: { readonly start: number; readonly counts: Counts; readonly total?: number } | undefined,
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
  const shift = state === undefined ? precision + 1 : shiftOf(state.start, start, size)
  const counts = state === undefined ? NONE : state.counts
  // The stored total, which the compact form needs to read its older count.
  const stored = state?.total ?? 0
  let total = 0
  if (shift <= precision) {
    if (state?.total === undefined) {
      for (let i = shift; i <= precision; i++) total += countIn(counts, stored, precision, i)
    } else {
      // The running total less the sub-windows that slid out: O(1) per sub-window passed.
      total = stored
      for (let i = 0; i < shift; i++) total -= countIn(counts, stored, precision, i)
    }
  }
  const oldest = shift <= precision ? countIn(counts, stored, precision, shift) : 0
  const left = start + size - now
  const estimate = (oldest * left) / size + (total - oldest)

  if (estimate + cost > limit + 1e-9) {
    const wait = timeUntilBelow(counts, stored, shift, 0, precision, left, size, estimate + cost - limit)
    const resetAfter = resetAfterOf(counts, stored, shift, 0, precision, left, size)
    return denied(floorUnits(limit - estimate), resetAfter, wait, label)
  }
  const remaining = floorUnits(limit - estimate - cost)
  const nextAfter =
    remaining === 0
      ? Math.max(1, timeUntilBelow(counts, stored, shift, cost, precision, left, size, estimate + cost + 1 - limit))
      : undefined
  return admitted(remaining, resetAfterOf(counts, stored, shift, cost, precision, left, size), 0, nextAfter, label)
}

/**
 * The count of sub-window `i` (0 the oldest): from the array, or from the compact form (see
 * `RunningWindow`), `total` being the state's stored running total.
 */
function countIn(counts: Counts, total: number, precision: number, i: number): number {
  if (typeof counts !== 'number') return counts[i] ?? 0
  return i === precision ? counts : i === precision - 1 ? total - counts : 0
}

const NONE: readonly number[] = []

/**
 * The sliding window on a state kept and changed in place (see `Meter`): the counts move down
 * only when a sub-window has passed, and the running total makes the estimate O(1) whatever
 * the precision.
 */
export const slidingWindowMeter: Meter<RunningWindow> = {
  decide(state, now, policy, cost, label) {
    // The common cases inline, still in the stored sub-window with quota to spare, worked out as
    // `decideSlidingWindow` does with no sub-window passed. Compact counts: the oldest sub-window
    // (index 0 of 3 or more) is empty, so the estimate is the total, and the reset is from the
    // newest non-empty sub-window. An array (a busy key): the newest sub-window holds counts.
    const { limit, precision } = policy
    if (state !== undefined && precision > 1) {
      const size = policy.window / precision
      const { start, counts, total } = state
      if (now >= start && now - start < size) {
        if (typeof counts === 'number') {
          const remaining = limit - total - cost
          if (remaining >= 1 && (total > 0 || cost > 0)) {
            const newest = counts + cost > 0 ? precision : precision - 1
            return admitted(floorUnits(remaining), start + size - now + newest * size, 0, undefined, label)
          }
        } else if ((counts[precision] as number) + cost > 0) {
          const oldest = counts[0] as number
          const left = start + size - now
          const remaining = floorUnits(limit - ((oldest * left) / size + (total - oldest)) - cost)
          if (remaining >= 1) return admitted(remaining, left + precision * size, 0, undefined, label)
        }
      }
    }
    return decideSlidingWindow(state, now, policy, cost, label)
  },
  take(state, now, { window, precision }, cost, spare) {
    const size = window / precision
    const start = alignedStart(now, size, state?.start)
    if (state === undefined) {
      if (spare === undefined) return { start, counts: cost, total: cost, expiry: 0 }
      // A spare keeps its form: an array it has is reused rather than left as old garbage.
      if (typeof spare.counts === 'number') spare.counts = cost
      else {
        spare.counts.fill(0)
        spare.counts[precision] = cost
      }
      spare.start = start
      spare.total = cost
      return spare
    }
    const shift = shiftOf(state.start, start, size)
    state.start = start
    let { counts } = state
    if (typeof counts === 'number') {
      const older = state.total - counts
      if (shift === 0) {
        state.counts = counts + cost
        state.total += cost
        return state
      }
      // Still compact if, after the shift, no count lands below the newest two sub-windows.
      if ((counts === 0 || shift === 1 || shift > precision) && (older === 0 || shift >= precision)) {
        const kept = shift === 1 ? counts : 0
        state.counts = cost
        state.total = kept + cost
        return state
      }
      counts = new Array<number>(precision + 1).fill(0)
      counts[precision] = state.counts as number
      counts[precision - 1] = older
      state.counts = counts
    }
    if (shift > precision) {
      counts.fill(0)
      state.total = 0
    } else if (shift > 0) {
      // A loop: copyWithin and fill cost more than they move for a few dozen counts.
      for (let i = 0; i < shift; i++) state.total -= counts[i] as number
      for (let i = 0; i <= precision; i++) counts[i] = i + shift <= precision ? (counts[i + shift] as number) : 0
    }
    counts[precision] = (counts[precision] as number) + cost
    state.total += cost
    return state
  },
  toState(state, { precision }) {
    const { start, counts, total } = state
    if (typeof counts !== 'number') return state
    const array = new Array<number>(precision + 1).fill(0)
    array[precision] = counts
    array[precision - 1] = total - counts
    return { start, counts: array }
  },
  fromState(state) {
    const { start, counts } = state as SlidingWindowState
    const newest = counts.length - 1
    let total = 0
    let compact = true
    for (let i = 0; i <= newest; i++) {
      total += counts[i] as number
      if (i < newest - 1 && counts[i] !== 0) compact = false
    }
    return { start, counts: compact ? (counts[newest] as number) : counts.slice(), total, expiry: 0 }
  },
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
 * Sub-windows passed from `from` to `to` (both aligned starts); a clock that stepped back passes
 * none. Most decisions land in the same sub-window as the last: no division then.
 */
function shiftOf(from: number, to: number, size: number): number {
  return to === from ? 0 : Math.max(0, (to - from) / size)
}

/** A new array of the counts as seen from the sub-window starting at `start`. */
function shifted(state: SlidingWindowState | undefined, start: number, size: number, precision: number): number[] {
  const shift = state === undefined ? precision + 1 : Math.max(0, (start - state.start) / size)
  // Native copies: most decisions land in the sub-window of the last one (shift 0).
  const counts = shift > precision ? [] : (state as SlidingWindowState).counts.slice(shift)
  while (counts.length <= precision) counts.push(0)
  return counts
}

/** The count of sub-window `i` (0 the oldest) seen `shift` sub-windows on, with `extra` in the newest. */
function countAt(counts: Counts, total: number, shift: number, extra: number, precision: number, i: number): number {
  const count = i + shift <= precision ? countIn(counts, total, precision, i + shift) : 0
  return i === precision ? count + extra : count
}

/**
 * The estimate falls linearly while the oldest sub-window slides out, then the next one starts
 * sliding out: walk those segments until `excess` has drained.
 */
function timeUntilBelow(
  counts: Counts,
  total: number,
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
    const count = countAt(counts, total, shift, extra, precision, i)
    const span = i === 0 ? left : size
    const drop = (count * span) / size
    if (count > 0 && drop >= need - 1e-9) return ceilMs(elapsed + (need * size) / count)
    need -= drop
    elapsed += span
  }
  return ceilMs(elapsed)
}

function resetAfterOf(
  counts: Counts,
  total: number,
  shift: number,
  extra: number,
  precision: number,
  left: number,
  size: number,
): number {
  for (let i = precision; i >= 0; i--) {
    if (countAt(counts, total, shift, extra, precision, i) > 0) return i === 0 ? left : left + i * size
  }
  return 0
}
