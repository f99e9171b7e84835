import type { AlgorithmName, Policy } from '../policy.js'
import { fixedWindow } from './fixed-window.js'
import { gcra } from './gcra.js'
import type { Outcome, Step, Transition } from './outcome.js'
import { slidingLog } from './sliding-log.js'
import { slidingWindow } from './sliding-window.js'
import { tokenBucket } from './token-bucket.js'

export type { FixedWindowState } from './fixed-window.js'
export type { GcraState } from './gcra.js'
export type { Outcome, Step, Transition } from './outcome.js'
export { ceilMs, EPSILON, floorUnits } from './outcome.js'
export type { SlidingLogState } from './sliding-log.js'
export type { SlidingWindowState } from './sliding-window.js'
export type { TokenBucketState } from './token-bucket.js'
export { fixedWindow, gcra, slidingLog, slidingWindow, tokenBucket }

/** State of any algorithm, as a store keeps it (opaque to the store). */
export type AlgorithmState = unknown

export const transitions: Readonly<Record<AlgorithmName, Transition<AlgorithmState>>> = {
  'fixed-window': fixedWindow as Transition<AlgorithmState>,
  'sliding-window': slidingWindow as Transition<AlgorithmState>,
  'sliding-log': slidingLog as Transition<AlgorithmState>,
  'token-bucket': tokenBucket as Transition<AlgorithmState>,
  gcra: gcra as Transition<AlgorithmState>,
}

export function step(
  state: AlgorithmState | undefined,
  now: number,
  policy: Policy,
  cost: number,
): Step<AlgorithmState> {
  return transitions[policy.algorithm](state, now, policy, cost)
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
