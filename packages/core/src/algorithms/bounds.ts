import type { Policy } from '../policies/policy.js'
import { floorUnits } from './outcome.js'

/**
 * The most cost a policy can admit in any span of `window` consecutive milliseconds — the
 * times in (t − window, t] on a whole-millisecond clock, the span a sliding log counts — whatever
 * the traffic. Each bound is attained by some request stream (see bounds.test.ts), so it is the
 * exact worst case, not a loose one. Admission times are counted: with `maxDelay` a shaped
 * request proceeds later, on the schedule, but is admitted (reserved) at once.
 *
 * - sliding-log: `limit`, the promise itself.
 * - fixed-window: `2 × limit`: the end of one aligned window and the start of the next.
 * - sliding-window, sub-windows of s = window / precision ms: `limit + ⌊limit·(s − 2)/s⌋`, just
 *   under 2 × limit at any precision: the estimate takes the oldest sub-window's traffic as even,
 *   and traffic packed into its last millisecond is counted in full by the span but only in part
 *   by the estimate. What precision buys is the typical case: the excess is at most the oldest
 *   sub-window's own count, about limit / precision for traffic spread over the window.
 * - token-bucket and gcra: `burst + limit·(maxDelay + window − 1)/window` units, floored: a full
 *   bucket at the span's first millisecond, then the refill over the rest of it. Both reach it
 *   when (burst − 1)·window/limit + maxDelay ≥ 1 ms (gcra may stay one unit short where the refill
 *   lands exactly on a whole unit: its TAT is an absolute time in a double); below that, on a
 *   whole-ms clock, a bucket would pass its burst between two ticks and is capped, and a gcra
 *   schedule empties and restarts at the later tick: they admit a little less.
 */
export function maxAdmittedInWindow(policy: Policy): number {
  const { limit, window, burst, precision, maxDelay } = policy
  switch (policy.algorithm) {
    case 'sliding-log':
      return limit
    case 'fixed-window':
      return 2 * limit
    case 'sliding-window': {
      const size = window / precision
      return size <= 2 ? limit : limit + floorUnits((limit * (size - 2)) / size)
    }
    case 'token-bucket':
    case 'gcra':
      return floorUnits(burst + (limit * (maxDelay + window - 1)) / window)
  }
}

/**
 * The sliding window's finer bound, for a stream whose busiest sub-window (aligned, of
 * window / precision ms) took `busiest` units: at most limit + busiest·(s − 2)/s in any window.
 */
export function slidingWindowBoundFor(policy: Policy, busiest: number): number {
  const size = policy.window / policy.precision
  return size <= 2 ? policy.limit : policy.limit + floorUnits((busiest * (size - 2)) / size)
}
