import type { Mutable } from './outcome.js'
import { admitted, denied, type Refund, type Transition } from './outcome.js'

/** Count in the current window, which is aligned to multiples of the window since the epoch. */
export interface FixedWindowState {
  readonly start: number
  readonly count: number
}

/**
 * Admits while count + cost ≤ limit within the aligned window. Across a boundary a client can
 * get up to 2 × limit in a short span (the end of one window and the start of the next); use
 * sliding-window or gcra where that matters.
 */
export const fixedWindow: Transition<FixedWindowState> = (state, now, policy, cost) => {
  const { limit, window } = policy
  const start = now - (now % window)
  const count = state !== undefined && state.start === start ? state.count : 0
  const windowLeft = start + window - now
  if (count + cost > limit) {
    return { state: state as FixedWindowState, outcome: denied(limit - count, windowLeft, windowLeft) }
  }
  const next = count + cost
  return { state: { start, count: next }, outcome: admitted(limit - next, next === 0 ? 0 : windowLeft) }
}

/** Gives back only while in the window that took it (a later window starts full anyway), never below 0. */
export const refundFixedWindow: Refund<FixedWindowState> = (state, now, policy, cost) => {
  if (state === undefined || state.count === 0 || state.start !== now - (now % policy.window)) return state
  return { start: state.start, count: Math.max(0, state.count - cost) }
}

/** Overwrites a stored state with a newer one of the same policy, for stores that keep state objects. */
export function copyFixedWindow(into: Mutable<FixedWindowState>, from: FixedWindowState): void {
  into.start = from.start
  into.count = from.count
}
