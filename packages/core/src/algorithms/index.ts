import { type AlgorithmName, isNamed, type Policy } from '../policies/policy.js'
import { type BlockingStep, type BlockState, blocking, blockUntil, penalizeBlocking, refundBlocking } from './block.js'
import { fixedWindow, fixedWindowMeter, penalizeFixedWindow, refundFixedWindow } from './fixed-window.js'
import { gcra, gcraMeter, penalizeGcra, plainGcraMeter, refundGcra, warmGcraMeter } from './gcra.js'
import type { Kept, Meter } from './meter.js'
import { type Outcome, type Penalty, peekOf, type Refund, type Transition } from './outcome.js'
import { penalizeSlidingLog, refundSlidingLog, slidingLog, slidingLogMeter } from './sliding-log.js'
import { penalizeSlidingWindow, refundSlidingWindow, slidingWindow, slidingWindowMeter } from './sliding-window.js'
import {
  penalizeTokenBucket,
  plainTokenBucketMeter,
  refundTokenBucket,
  tokenBucket,
  tokenBucketMeter,
  warmTokenBucketMeter,
} from './token-bucket.js'

export type { BlockingStep, BlockState } from './block.js'
export { maxAdmittedInWindow, slidingWindowBoundFor } from './bounds.js'
export type { FixedWindowState } from './fixed-window.js'
export { windowStart } from './fixed-window.js'
export type { GcraState } from './gcra.js'
export type { Kept, Meter } from './meter.js'
export type { Outcome, Penalty, Refund, Step, Transition } from './outcome.js'
export { EPSILON, ESTIMATE_EPSILON } from './outcome.js'
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

/** The transition of each algorithm, by name. */
export const transitions: Readonly<Record<AlgorithmName, Transition<AlgorithmState>>> = {
  'fixed-window': fixedWindow as Transition<AlgorithmState>,
  'sliding-window': slidingWindow as Transition<AlgorithmState>,
  'sliding-log': slidingLog as Transition<AlgorithmState>,
  'token-bucket': tokenBucket as Transition<AlgorithmState>,
  gcra: gcra as Transition<AlgorithmState>,
}

/** The refund rule of each algorithm, by name. */
export const refunds: Readonly<Record<AlgorithmName, Refund<AlgorithmState>>> = {
  'fixed-window': refundFixedWindow as Refund<AlgorithmState>,
  'sliding-window': refundSlidingWindow as Refund<AlgorithmState>,
  'sliding-log': refundSlidingLog as Refund<AlgorithmState>,
  'token-bucket': refundTokenBucket as Refund<AlgorithmState>,
  gcra: refundGcra as Refund<AlgorithmState>,
}

/** The transitions and refunds of policies with `blockFor` (see `blocking`). */
const blockingTransitions = Object.fromEntries(
  Object.entries(transitions).map(([name, transition]) => [name, blocking(transition) as Transition<AlgorithmState>]),
) as Readonly<Record<AlgorithmName, Transition<AlgorithmState>>>
const blockingRefunds = Object.fromEntries(
  Object.entries(refunds).map(([name, refund]) => [name, refundBlocking(refund) as Refund<AlgorithmState>]),
) as Readonly<Record<AlgorithmName, Refund<AlgorithmState>>>

const penalties: Readonly<Record<AlgorithmName, Penalty<AlgorithmState>>> = {
  'fixed-window': penalizeFixedWindow as Penalty<AlgorithmState>,
  'sliding-window': penalizeSlidingWindow as Penalty<AlgorithmState>,
  'sliding-log': penalizeSlidingLog as Penalty<AlgorithmState>,
  'token-bucket': penalizeTokenBucket as Penalty<AlgorithmState>,
  gcra: penalizeGcra as Penalty<AlgorithmState>,
}
const blockingPenalties = Object.fromEntries(
  Object.entries(penalties).map(([name, penalize]) => [name, penalizeBlocking(penalize) as Penalty<AlgorithmState>]),
) as Readonly<Record<AlgorithmName, Penalty<AlgorithmState>>>

/** Takes `cost` units from one policy's state whatever its limit (see `Penalty`). */
export function penalize(state: AlgorithmState | undefined, now: number, policy: Policy, cost: number): AlgorithmState {
  return (policy.blockFor > 0 ? blockingPenalties : penalties)[policy.algorithm](state, now, policy, cost)
}

export { blockUntil }
/** For a policy with `blockFor`: its state blocked until `until`. */
export function blockState(state: AlgorithmState | undefined, until: number): AlgorithmState {
  return blockUntil(state as BlockState | undefined, until)
}

/**
 * Each algorithm on a state the store keeps and changes in place (see `Meter`), for stores that
 * keep state objects (MemoryStore): the transitions' decisions without a new state per request.
 * Policies with `blockFor` use the transitions.
 */
export const meters: Readonly<Record<AlgorithmName, Meter<Kept>>> = {
  'fixed-window': fixedWindowMeter as Meter<Kept>,
  'sliding-window': slidingWindowMeter as Meter<Kept>,
  'sliding-log': slidingLogMeter as Meter<Kept>,
  'token-bucket': tokenBucketMeter as Meter<Kept>,
  gcra: gcraMeter as Meter<Kept>,
}

/**
 * `meters` for a policy without a name, whose limit never changes under its state: the bucket and
 * GCRA keep no plan then (see `plainTokenBucketMeter`). The windows and the log keep none either way.
 */
export const plainMeters: Readonly<Record<AlgorithmName, Meter<Kept>>> = {
  ...meters,
  'token-bucket': plainTokenBucketMeter as Meter<Kept>,
  gcra: plainGcraMeter as Meter<Kept>,
}

/**
 * The meter a store keeping states in place uses for `policy`, chosen once per policy set: none
 * with `blockFor` (the transitions), the warming ones with `warmup`, the plain ones for a policy
 * without a name; so a plain policy's path holds no test for what it does not use.
 */
export function meterOf(policy: Policy): Meter<Kept> | undefined {
  if (policy.blockFor > 0) return undefined
  if (policy.warmup > 0) {
    return (policy.algorithm === 'gcra' ? warmGcraMeter : warmTokenBucketMeter) as Meter<Kept>
  }
  return (isNamed(policy) ? meters : plainMeters)[policy.algorithm]
}

/** Runs one policy's transition: `(state, now, policy, cost) → { state, outcome }`. */
export function step(
  state: AlgorithmState | undefined,
  now: number,
  policy: Policy,
  cost: number,
): BlockingStep<AlgorithmState> {
  return (policy.blockFor > 0 ? blockingTransitions : transitions)[policy.algorithm](state, now, policy, cost)
}

/** Gives back `cost` units to one policy's state (see `Refund`). */
export function refund(
  state: AlgorithmState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  admittedAt?: number,
): AlgorithmState {
  return (policy.blockFor > 0 ? blockingRefunds : refunds)[policy.algorithm](state, now, policy, cost, admittedAt)
}

/**
 * What a peek reports: the quota left without taking any (a cost-0 step), and whether, or
 * when, a request of cost 1 would pass. Neither step's state is kept.
 */
export function peekOutcome(state: AlgorithmState | undefined, now: number, policy: Policy): Outcome {
  return peekOf(step(state, now, policy, 0).outcome, step(state, now, policy, 1).outcome)
}
