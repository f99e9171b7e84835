import type { Mutable } from './outcome.js'
import { admitted, denied, type Refund, type Transition } from './outcome.js'

/**
 * Admission times inside the last window, oldest first, with the cost admitted at each. Memory
 * is O(limit) per key, which is why policies cap sliding-log limits (MAX_SLIDING_LOG_LIMIT).
 */
export interface SlidingLogState {
  readonly times: readonly number[]
  readonly costs: readonly number[]
}

/** Exact: admits while the cost admitted in (now − window, now] plus this cost ≤ limit. */
export const slidingLog: Transition<SlidingLogState> = (state, now, policy, cost) => {
  const { limit, window } = policy
  const times = state?.times ?? []
  const costs = state?.costs ?? []
  let first = 0
  while (first < times.length && (times[first] as number) <= now - window) first++
  let used = 0
  for (let i = first; i < costs.length; i++) used += costs[i] as number
  const newest = times.length > first ? (times[times.length - 1] as number) : undefined

  if (used + cost > limit) {
    let excess = used + cost - limit
    let i = first
    while (excess > 0) excess -= costs[i++] as number
    const leaves = (times[i - 1] as number) + window - now
    return { state: state as SlidingLogState, outcome: denied(limit - used, (newest as number) + window - now, leaves) }
  }
  if (cost === 0) {
    return {
      state: state as SlidingLogState,
      outcome: admitted(limit - used, newest === undefined ? 0 : newest + window - now),
    }
  }
  const nextTimes = times.slice(first)
  const nextCosts = costs.slice(first)
  if (newest === now) {
    nextCosts[nextCosts.length - 1] = (nextCosts[nextCosts.length - 1] as number) + cost
  } else {
    nextTimes.push(now)
    nextCosts.push(cost)
  }
  return { state: { times: nextTimes, costs: nextCosts }, outcome: admitted(limit - used - cost, window) }
}

/** Takes the cost off the newest entries still inside the window (dropping emptied ones), never below 0. */
export const refundSlidingLog: Refund<SlidingLogState> = (state, now, policy, cost) => {
  if (state === undefined) return state
  const { times, costs } = state
  let first = 0
  while (first < times.length && (times[first] as number) <= now - policy.window) first++
  if (first === times.length) return state
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

/** Overwrites a stored state with a newer one of the same policy, for stores that keep state objects. */
export function copySlidingLog(into: Mutable<SlidingLogState>, from: SlidingLogState): void {
  into.times = from.times
  into.costs = from.costs
}
