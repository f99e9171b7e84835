import type { Policy } from '../policies/policy.js'
import type { Kept, Meter } from './meter.js'
import { admitted, denied, type Mutable, type Outcome, type Penalty, type Refund, type Transition } from './outcome.js'

/**
 * Count in the current window, which is aligned to multiples of the window since the epoch,
 * shifted by the policy's `offset` (a calendar period's start), or, with `start: 'first-request'`,
 * starts at the key's first request after the last window ended.
 */
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
  const outcome = decideFixedWindow(state, now, policy, cost)
  if (!outcome.allowed) return { state: state as FixedWindowState, outcome }
  const start = startAt(now, policy, state?.start)
  const count = state !== undefined && state.start === start ? state.count : 0
  return { state: { start, count: count + cost }, outcome }
}

/**
 * The start of the window a write at `now` goes to: the aligned one (`windowStart`), or with
 * `start: 'first-request'` the key's window while it lasts, else one starting `now`.
 */
function startAt(now: number, policy: Policy, known: number | undefined): number {
  return policy.start === 'first-request' ? knownStart(now, policy, known) : windowStart(now, policy)
}

/**
 * The start of the window that holds `now`: `offset` after a multiple of `window`. Only the
 * window and offset are read, so a store may pass what it keeps of a policy (a sub-window's span).
 */
export function windowStart(now: number, { window, offset }: Pick<Policy, 'window' | 'offset'>): number {
  const into = (now - offset) % window
  return now - (into < 0 ? into + window : into)
}

/**
 * `known` (a state's start) while `now` is still inside that window; else `windowStart`, or `now`
 * itself with `start: 'first-request'` (a request opens the window).
 */
function knownStart(now: number, policy: Policy, known: number | undefined): number {
  if (known !== undefined && now >= known && now - known < policy.window) return known
  return policy.start === 'first-request' ? now : windowStart(now, policy)
}

/** The fixed window's outcome (see `fixedWindow`), changing nothing. */
function decideFixedWindow(
  state: FixedWindowState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  const { limit, window } = policy
  const start = knownStart(now, policy, state?.start)
  const count = state !== undefined && state.start === start ? state.count : 0
  const windowLeft = start + window - now
  if (count + cost > limit) return denied(Math.max(0, limit - count), windowLeft, windowLeft, label)
  const next = count + cost
  return admitted(limit - next, next === 0 ? 0 : windowLeft, 0, next === limit ? windowLeft : undefined, label)
}

/** The fixed window on a state kept and changed in place (see `Meter`). */
export const fixedWindowMeter: Meter<Mutable<FixedWindowState> & Kept> = {
  decide: decideFixedWindow,
  take(live, now, policy, cost, spare) {
    const start = knownStart(now, policy, live?.start)
    const state = live ?? spare
    if (state === undefined) return { start, count: cost, expiry: 0, protectedUntil: 0 }
    state.count = live !== undefined && live.start === start ? live.count + cost : cost
    state.start = start
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({
    start: (state as FixedWindowState).start,
    count: (state as FixedWindowState).count,
    expiry: 0,
    protectedUntil: 0,
  }),
}

/**
 * Gives back only while in the window that took it (a later window starts full anyway), never
 * below 0; with `admittedAt`, only when the request was admitted in this same window.
 */
export const refundFixedWindow: Refund<FixedWindowState> = (state, now, policy, cost, admittedAt) => {
  if (state === undefined || state.count === 0 || state.start !== startAt(now, policy, state.start)) return state
  if (admittedAt !== undefined && startAt(admittedAt, policy, state.start) !== state.start) return state
  return { start: state.start, count: Math.max(0, state.count - cost) }
}

/** As a consume of `cost` would write it, admitted whatever the limit (see `Penalty`). */
export const penalizeFixedWindow: Penalty<FixedWindowState> = (state, now, policy, cost) => {
  const start = startAt(now, policy, state?.start)
  const count = state !== undefined && state.start === start ? state.count : 0
  return { start, count: count + cost }
}
