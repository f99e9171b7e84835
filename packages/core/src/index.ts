export type { AcquireOptions } from './acquire.js'
export * from './admission/index.js'
export * from './algorithms/index.js'
export type { BreakerOptions } from './breaker.js'
export { BreakerOpenError } from './breaker.js'
export type { Decision, DecisionSource, PolicyDecision } from './decision.js'
export { toDecision } from './decision.js'
export type { DurationUnit } from './duration.js'
export { parseDurationString, toMilliseconds } from './duration.js'
export { ConfigError, StoreFullError, StoreTimeoutError } from './errors.js'
export type { FallbackShareOptions } from './fallback-share.js'
export { FallbackShare } from './fallback-share.js'
export * from './http/index.js'
export type { OptionHint } from './known-options.js'
export { assertKnownOptions, FOREIGN_OPTION_HINTS } from './known-options.js'
export type { ConsumeOptions, Limiter, LimiterOptions, RefundOptions } from './limiter.js'
export { createLimiter, LIMITER_OPTION_NAMES } from './limiter.js'
export type { MemoryStoreOptions } from './memory-store.js'
export { MEMORY_STORE_OPTION_NAMES, MemoryStore } from './memory-store.js'
export type {
  BreakerCloseEvent,
  BreakerOpenEvent,
  ConcurrencyEvent,
  DecisionEvent,
  Observe,
  ObserveEvent,
  StoreErrorEvent,
  SyncEvent,
} from './observe.js'
export { containObserve } from './observe.js'
export type {
  AlgorithmName,
  CheckedLimits,
  DurationText,
  NotAShorthand,
  Policy,
  PolicyInput,
  PolicyOptions,
  PolicySet,
  ShorthandPolicy,
} from './policy.js'
export {
  ALGORITHMS,
  capacityOf,
  formatDuration,
  MAX_HEADER_INTEGER,
  MAX_PRECISION,
  MAX_SLIDING_LOG_LIMIT,
  parsePolicies,
  parsePolicy,
  policySetOf,
} from './policy.js'
export * from './sketch/index.js'
export type { Awaitable, Evaluation, Store } from './store.js'
export { evaluate } from './store.js'
