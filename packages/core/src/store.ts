/**
 * `@sluice/core/store`: what a store's author needs beyond the main entry, and nothing else: the
 * store contract, each algorithm's pure transition, refund and penalty (the rules a store must
 * follow; the Redis scripts mirror them line for line), `evaluate` to run a set's transitions
 * all-or-nothing, where a fixed window starts (`windowStart`, for calendar periods) and whether a
 * policy is named (`isNamed`, for `namedAlgorithms`). Applications do not need it.
 */

export type {
  AlgorithmState,
  BlockingStep,
  BlockState,
  FixedWindowState,
  GcraState,
  Outcome,
  Penalty,
  Refund,
  SlidingLogState,
  SlidingWindowState,
  Step,
  TokenBucketState,
  Transition,
} from './algorithms/index.js'
export {
  blockState,
  EPSILON,
  ESTIMATE_EPSILON,
  fixedWindow,
  gcra,
  peekOutcome,
  penalize,
  refund,
  refundFixedWindow,
  refundGcra,
  refundSlidingLog,
  refundSlidingWindow,
  refundTokenBucket,
  slidingLog,
  slidingWindow,
  step,
  tokenBucket,
  transitions,
  windowStart,
} from './algorithms/index.js'
export { isNamed } from './policies/policy.js'
export type { Awaitable, Evaluation, Store } from './stores/contract.js'
export { evaluate } from './stores/contract.js'
