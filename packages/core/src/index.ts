/**
 * `@sluice/core`: what an application uses. A store's author finds the store contract and the
 * algorithms' transitions in `@sluice/core/store`; a framework adapter's, the request planners in
 * `@sluice/core/adapter`.
 */

export type { ActiveClientsOptions } from './admission/active-clients.js'
export { ActiveClients } from './admission/active-clients.js'
export { maxAdmittedInWindow, slidingWindowBoundFor } from './algorithms/bounds.js'
export { ConfigError, StoreFullError, StoreTimeoutError } from './diagnostics/errors.js'
export type {
  BreakerCloseEvent,
  BreakerOpenEvent,
  ConcurrencyEvent,
  DecisionEvent,
  Observe,
  ObserveEvent,
  OverloadEvent,
  OverloadLimitEvent,
  OverloadRefusal,
  StoreErrorEvent,
  SyncEvent,
} from './diagnostics/observe.js'
export type { Validate, WarningCode } from './diagnostics/validations.js'
export { WARNING_CODES } from './diagnostics/validations.js'
export type { AdmissionEvent } from './http/admission.js'
export { THROTTLING_MODE } from './http/admission.js'
export { ClientAddressError, ipKey } from './http/client-ip.js'
export { QUOTA_EXCEEDED, STORE_UNAVAILABLE, TEMPORARY_REDUCED_CAPACITY } from './http/problem.js'
export type { RequestKey } from './http/request-key.js'
export type { AcquireOptions } from './limiter/acquire.js'
export type { BreakerOptions } from './limiter/breaker.js'
export { BreakerOpenError } from './limiter/breaker.js'
export type { Decision, DecisionSource, PolicyDecision } from './limiter/decision.js'
export type { ConsumeOptions, Limiter, LimiterOptions, RefundOptions, SettleOptions } from './limiter/limiter.js'
export { createLimiter } from './limiter/limiter.js'
export type { PolicyUsage } from './limiter/usage.js'
export type {
  AdaptiveLimiterOptions,
  DelayHistogram,
  OverloadAlgorithm,
  OverloadClass,
  OverloadClock,
} from './overload/adaptive-options.js'
export { OVERLOAD_ALGORITHMS } from './overload/adaptive-options.js'
export type { AimdOptions } from './overload/aimd.js'
export type { ClientThrottle, ClientThrottleOptions } from './overload/client-throttle.js'
export { createClientThrottle, ThrottledError } from './overload/client-throttle.js'
export type {
  AdaptiveLimiter,
  OverloadClassStats,
  OverloadStats,
  Refused,
  Slot,
  WorkOutcome,
} from './overload/controller.js'
export { createAdaptiveLimiter, OverloadedError } from './overload/controller.js'
export type { Gradient2Options } from './overload/gradient2.js'
export type { VegasOptions } from './overload/vegas.js'
export type { CalendarDate, Period, PeriodBounds } from './policies/calendar.js'
export { PERIODS, periodBounds } from './policies/calendar.js'
export type { DurationUnit } from './policies/duration.js'
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
  WindowStart,
} from './policies/policy.js'
export { ALGORITHMS, MAX_PRECISION, MAX_SLIDING_LOG_LIMIT, parsePolicies, parsePolicy } from './policies/policy.js'
export { CountMinSketch } from './sketch/count-min.js'
export type { InflightCounting, InflightGuard } from './sketch/inflight.js'
export { InflightCounter, SketchInflightCounter } from './sketch/inflight.js'
export type { RateEstimatorOptions } from './sketch/rate-estimator.js'
export { RateEstimator } from './sketch/rate-estimator.js'
export { SharedCountMinSketch } from './sketch/shared-count-min.js'
export { SharedInflightCounter } from './sketch/shared-inflight.js'
export type { SharedRateEstimatorOptions } from './sketch/shared-rate-estimator.js'
export { SharedRateEstimator } from './sketch/shared-rate-estimator.js'
// The contract, for an application that types a store it passes around; its authors' tools are in @sluice/core/store.
export type { Store } from './stores/contract.js'
export type { FallbackShareOptions } from './stores/fallback-share.js'
export { FallbackShare } from './stores/fallback-share.js'
export type { FilteredStoreOptions } from './stores/filtered-store.js'
export { FilteredStore } from './stores/filtered-store.js'
export type { MemoryStoreOptions } from './stores/memory-store.js'
export { MemoryStore } from './stores/memory-store.js'
export type { SketchStoreOptions } from './stores/sketch-store.js'
export { SketchStore } from './stores/sketch-store.js'
