import type { AlgorithmName, Policy } from '../policy.js'
import { copyFixedWindow, fixedWindow, refundFixedWindow } from './fixed-window.js'
import { copyGcra, gcra, refundGcra } from './gcra.js'
import type { Outcome, Refund, Step, Transition } from './outcome.js'
import { copySlidingLog, refundSlidingLog, slidingLog } from './sliding-log.js'
import { copySlidingWindow, refundSlidingWindow, slidingWindow } from './sliding-window.js'
import { copyTokenBucket, refundTokenBucket, tokenBucket } from './token-bucket.js'

export type { FixedWindowState } from './fixed-window.js'
export type { GcraState } from './gcra.js'
export type { Outcome, Refund, Step, Transition } from './outcome.js'
export { ceilMs, EPSILON, floorUnits } from './outcome.js'
export type { SlidingLogState } from './sliding-log.js'
export type { SlidingWindowState } from './sliding-window.js'
export type { TokenBucketState } from './token-bucket.js'
export {
  fixedWindow,
  gcra,
  refundFixedWindow,
  refundGcra,
  refundSlidingLog,
  refundSlidingWindow,
  refundTokenBucket,
  slidingLog,
  slidingWindow,
  tokenBucket,
}

/** State of any algorithm, as a store keeps it (opaque to the store). */
export type AlgorithmState = unknown

export const transitions: Readonly<Record<AlgorithmName, Transition<AlgorithmState>>> = {
  'fixed-window': fixedWindow as Transition<AlgorithmState>,
  'sliding-window': slidingWindow as Transition<AlgorithmState>,
  'sliding-log': slidingLog as Transition<AlgorithmState>,
  'token-bucket': tokenBucket as Transition<AlgorithmState>,
  gcra: gcra as Transition<AlgorithmState>,
}

export const refunds: Readonly<Record<AlgorithmName, Refund<AlgorithmState>>> = {
  'fixed-window': refundFixedWindow as Refund<AlgorithmState>,
  'sliding-window': refundSlidingWindow as Refund<AlgorithmState>,
  'sliding-log': refundSlidingLog as Refund<AlgorithmState>,
  'token-bucket': refundTokenBucket as Refund<AlgorithmState>,
  gcra: refundGcra as Refund<AlgorithmState>,
}

type Copy = (into: AlgorithmState, from: AlgorithmState) => void

/**
 * Overwrites a stored state in place with the newer state a transition returned. A store that
 * keeps state objects (MemoryStore) uses it so that the fresh objects die young instead of being
 * promoted by the garbage collector, one per key per decision.
 */
export const copyState: Readonly<Record<AlgorithmName, Copy>> = {
  'fixed-window': copyFixedWindow as Copy,
  'sliding-window': copySlidingWindow as Copy,
  'sliding-log': copySlidingLog as Copy,
  'token-bucket': copyTokenBucket as Copy,
  gcra: copyGcra as Copy,
}

export function step(
  state: AlgorithmState | undefined,
  now: number,
  policy: Policy,
  cost: number,
): Step<AlgorithmState> {
  return transitions[policy.algorithm](state, now, policy, cost)
}

/** Gives back `cost` units to one policy's state (see `Refund`). */
export function refund(state: AlgorithmState | undefined, now: number, policy: Policy, cost: number): AlgorithmState {
  return refunds[policy.algorithm](state, now, policy, cost)
}

/**
 * What a peek reports: the quota left without taking any (a cost-0 step), and whether, or
 * when, a request of cost 1 would pass. Neither step's state is kept.
 */
export function peekOutcome(state: AlgorithmState | undefined, now: number, policy: Policy): Outcome {
  const current = step(state, now, policy, 0).outcome
  const next = step(state, now, policy, 1).outcome
  return {
    allowed: next.allowed,
    remaining: current.remaining,
    resetAfter: current.resetAfter,
    retryAfter: next.retryAfter,
    delay: 0,
  }
}
