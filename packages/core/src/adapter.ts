/**
 * `@sluice/core/adapter`: what a framework adapter needs beyond the main entry: the shared
 * request planners, the helpers that keep a synchronous decision synchronous, response-lifetime
 * hooks, and the option and body types the planners share. Applications do not need it: each
 * framework package exports what its middleware takes.
 */
export type {
  AdaptiveConcurrencyOptions,
  AdaptiveHandler,
  AdaptivePlan,
  MonitorEventLoopDelay,
  NodeEventLoopDelay,
  OverloadInfo,
} from './http/adaptive.js'
export { createAdaptiveHandler, withEventLoopHistogram } from './http/adaptive.js'
export type {
  ActiveClientsSync,
  AdmissionControlOptions,
  AdmissionHandler,
  AdmissionInfo,
  AdmissionPlan,
  AdmissionState,
  ThrottlingProblem,
} from './http/admission.js'
export { createAdmissionHandler } from './http/admission.js'
export type { Adapter, CommonOptions } from './http/common-options.js'
export type {
  ConcurrencyHandler,
  ConcurrencyInfo,
  ConcurrencyLimitOptions,
  ConcurrencyPlan,
} from './http/concurrency.js'
export { createConcurrencyHandler } from './http/concurrency.js'
export type { HeaderEntry, HeaderMode, HeadersOption } from './http/headers.js'
export { lowerCaseName } from './http/headers.js'
export type { ProblemDetails } from './http/problem.js'
export type { ForwardedTrust, ProxySetup } from './http/proxy-check.js'
export type { RateLimitHandler, RateLimitOptions, RateLimitPlan } from './http/rate-limit.js'
export { createRateLimitHandler } from './http/rate-limit.js'
export type { Denial, DenyPlan, Message, ResponseBody } from './http/response.js'
export { sleep } from './http/response.js'
export type { NodeResponse } from './http/stream.js'
export { onResponseDone, onStreamDone } from './http/stream.js'
export { andThen, isThenable, whenReady } from './stores/contract.js'
