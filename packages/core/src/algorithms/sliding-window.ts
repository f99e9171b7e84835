import type { Mutable } from './outcome.js'
import { admitted, ceilMs, denied, floorUnits, type Refund, type Transition } from './outcome.js'

/**
 * Counts of the last `precision + 1` sub-windows, oldest first, the last being the one that
 * contains `start`. With precision 1 this is Cloudflare's previous/current counter pair.
 */
export interface SlidingWindowState {
  readonly start: number
  readonly counts: readonly number[]
}

/**
 * Estimates the count over the last window as the full sub-windows inside it plus the oldest
 * sub-window weighted by the part of it still inside (traffic assumed even within it).
 * Admits while estimate + cost ≤ limit.
 */
export const slidingWindow: Transition<SlidingWindowState> = (state, now, policy, cost) => {
  const { limit, precision } = policy
  const size = policy.window / precision
  const start = now - (now % size)
  const counts = shifted(state, start, size, precision)
  const left = start + size - now
  const estimate = estimateOf(counts, left, size)

  if (estimate + cost > limit + 1e-9) {
    const wait = timeUntilBelow(counts, left, size, estimate + cost - limit)
    return {
      state: state as SlidingWindowState,
      outcome: denied(floorUnits(limit - estimate), resetAfterOf(counts, left, size), wait),
    }
  }
  if (cost === 0) {
    return {
      state: state as SlidingWindowState,
      outcome: admitted(floorUnits(limit - estimate), resetAfterOf(counts, left, size)),
    }
  }
  // `counts` is this call's own array (see shifted), so it can become the new state.
  counts[precision] = (counts[precision] as number) + cost
  return {
    state: { start, counts },
    outcome: admitted(floorUnits(limit - estimate - cost), resetAfterOf(counts, left, size)),
  }
}

/**
 * Takes the cost off the newest sub-windows still holding counts, newest first, never below 0:
 * counts that have slid out of the window are gone and give nothing back. The state keeps its
 * `start`, so a store that writes a same-start state in place (Redis) keeps a correct expiry.
 */
export const refundSlidingWindow: Refund<SlidingWindowState> = (state, now, policy, cost) => {
  if (state === undefined) return state
  const size = policy.window / policy.precision
  const start = now - (now % size)
  // Indices below `shift` have slid out; a clock that stepped back shifts nothing.
  const shift = Math.max(0, (start - state.start) / size)
  const counts = state.counts.slice()
  let left = cost
  for (let i = counts.length - 1; i >= shift && left > 0; i--) {
    const taken = Math.min(left, counts[i] as number)
    counts[i] = (counts[i] as number) - taken
    left -= taken
  }
  return left === cost ? state : { start: state.start, counts }
}

/** A new array of the counts as seen from the sub-window starting at `start`. */
function shifted(state: SlidingWindowState | undefined, start: number, size: number, precision: number): number[] {
  const counts: number[] = []
  // A clock that steps back (NTP) must not read past the stored counts: treat it as no time passed.
  const shift = state === undefined ? precision + 1 : Math.max(0, (start - state.start) / size)
  for (let i = 0; i <= precision; i++) {
    counts.push(i + shift <= precision ? ((state as SlidingWindowState).counts[i + shift] as number) : 0)
  }
  return counts
}

/** `left` is the time until the current sub-window ends; the oldest one is that fraction inside. */
function estimateOf(counts: readonly number[], left: number, size: number): number {
  let sum = ((counts[0] as number) * left) / size
  for (let i = 1; i < counts.length; i++) sum += counts[i] as number
  return sum
}

/**
 * The estimate falls linearly while the oldest sub-window slides out, then the next one starts
 * sliding out: walk those segments until `excess` has drained.
 */
function timeUntilBelow(counts: readonly number[], left: number, size: number, excess: number): number {
  let elapsed = 0
  let need = excess
  for (let i = 0; i < counts.length; i++) {
    const count = counts[i] as number
    const span = i === 0 ? left : size
    const drop = (count * span) / size
    if (count > 0 && drop >= need - 1e-9) return ceilMs(elapsed + (need * size) / count)
    need -= drop
    elapsed += span
  }
  return ceilMs(elapsed)
}

function resetAfterOf(counts: readonly number[], left: number, size: number): number {
  for (let i = counts.length - 1; i >= 0; i--) {
    if ((counts[i] as number) > 0) return i === 0 ? left : left + i * size
  }
  return 0
}

/** Overwrites a stored state with a newer one of the same policy, for stores that keep state objects. */
export function copySlidingWindow(into: Mutable<SlidingWindowState>, from: SlidingWindowState): void {
  into.start = from.start
  const counts = into.counts as number[]
  for (let i = 0; i < from.counts.length; i++) counts[i] = from.counts[i] as number
}
