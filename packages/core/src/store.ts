/**
 * `@sluice/core/store`: what a store's author needs beyond the main entry: the store contract,
 * each algorithm's pure transition, refund and penalty (the rules a store must follow; the Redis
 * scripts mirror them line for line), `evaluate` to run a set's transitions all-or-nothing, and
 * the helpers the repository's stores share. Applications do not need it.
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
export { toDecision } from './decision.js'
export { parseDurationString, toMilliseconds } from './duration.js'
export type { ActiveClientsSync } from './http/admission.js'
export type { OptionHint } from './known-options.js'
export { assertKnownOptions } from './known-options.js'
export { containObserve } from './observe.js'
export { capacityOf, formatDuration, isNamed, policySetOf } from './policy.js'
export type { Awaitable, Evaluation, Store } from './stores/store.js'
export { evaluate } from './stores/store.js'
