/**
 * `@sluice/core/adapter`: what a framework adapter needs beyond the main entry: the shared
 * request planners, the helpers that keep a synchronous decision synchronous, response-lifetime
 * hooks, and the rounding rules every store shares. Applications do not need it.
 */

export { ceilMs, EPSILON, floorUnits } from './algorithms/outcome.js'
export type { AdmissionHandler, AdmissionPlan } from './http/admission.js'
export { createAdmissionHandler } from './http/admission.js'
export type { ConcurrencyHandler, ConcurrencyPlan } from './http/concurrency.js'
export { createConcurrencyHandler } from './http/concurrency.js'
export { lowerCaseName } from './http/headers.js'
export type { Adapter } from './http/options.js'
export type { ForwardedTrust, ProxySetup } from './http/proxy-check.js'
export type { RateLimitHandler, RateLimitPlan } from './http/rate-limit.js'
export { createRateLimitHandler } from './http/rate-limit.js'
export type { Denial, DenyPlan } from './http/response.js'
export { sleep } from './http/response.js'
export type { NodeResponse } from './http/stream.js'
export { onResponseDone, onStreamDone } from './http/stream.js'
export { andThen, isThenable, whenReady } from './stores/store.js'
