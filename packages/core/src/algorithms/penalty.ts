import type { Policy } from '../policy.js'
import type { BlockState } from './block.js'
import { type FixedWindowState, windowStart } from './fixed-window.js'
import { type GcraState, storedBacklog } from './gcra.js'
import { appended, type SlidingLogState } from './sliding-log.js'
import type { SlidingWindowState } from './sliding-window.js'
import { storedTokens, type TokenBucketState } from './token-bucket.js'

/**
 * Takes `cost` units whatever the limit says (rate-limiter-flexible's `penalty`): the state a
 * consume of `cost` would write, as if it had been admitted. The count may go past the limit;
 * the key is then denied until enough of it has drained, as each algorithm drains.
 */
export type Penalty<S> = (state: S | undefined, now: number, policy: Policy, cost: number) => S

export const penalizeFixedWindow: Penalty<FixedWindowState> = (state, now, policy, cost) => {
  const start = windowStart(now, policy)
  const count = state !== undefined && state.start === start ? state.count : 0
  return { start, count: count + cost }
}

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

export const penalizeSlidingLog: Penalty<SlidingLogState> = (state, now, { window }, cost) =>
  appended(state, now, window, cost)

export const penalizeTokenBucket: Penalty<TokenBucketState> = (state, now, policy, cost) => {
  const { limit, window, burst } = policy
  const capacity = burst * window
  const tokens = state === undefined ? capacity : storedTokens(state, now, policy)
  return { tokens: tokens - cost * window, updated: now, burst, limit }
}

/**
 * The TAT goes on by T per unit, up to a window beyond tolerance + maxDelay: the furthest a TAT
 * is read as one (see gcra), so a penalty keeps a key denied for at most about a window more.
 */
export const penalizeGcra: Penalty<GcraState> = (state, now, policy, cost) => {
  const { limit, window, burst, maxDelay } = policy
  const interval = window / limit
  const backlog = state === undefined ? 0 : Math.max(0, storedBacklog(state, now, policy))
  return { tat: now + Math.min(backlog + interval * cost, interval * burst + maxDelay + window), limit }
}

/** A blocking policy's penalty goes to the algorithm's state; a block stays. */
export function penalizeBlocking(penalize: Penalty<unknown>): Penalty<BlockState> {
  return (state, now, policy, cost) => ({ until: state?.until ?? 0, inner: penalize(state?.inner, now, policy, cost) })
}
