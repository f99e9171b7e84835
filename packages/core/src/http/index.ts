export type { ParsedIp } from './client-ip.js'
export {
  ClientAddressError,
  DEFAULT_IPV6_SUBNET,
  ipKey,
  ipv6SubnetOption,
  MAX_IPV6_SUBNET,
  MIN_IPV6_SUBNET,
  parseIp,
} from './client-ip.js'
export type { ConcurrencyHandler, ConcurrencyInfo, ConcurrencyLimitOptions, ConcurrencyPlan } from './concurrency.js'
export { createConcurrencyHandler } from './concurrency.js'
export type { HeaderEntry, HeaderMode, HeadersOption } from './headers.js'
export {
  concurrencyHeaders,
  HEADER_MODES,
  headerModeOption,
  rateLimitHeaders,
  resetSeconds,
  retryAfterHeader,
  retryAfterSeconds,
  sfString,
} from './headers.js'
export type { Adapter, CommonOptions } from './options.js'
export type { ProblemDetails } from './problem.js'
export {
  concurrencyProblem,
  PROBLEM_CONTENT_TYPE,
  QUOTA_EXCEEDED,
  rateLimitProblem,
  TEMPORARY_REDUCED_CAPACITY,
} from './problem.js'
export type { ForwardedTrust, ProxySetup } from './proxy-check.js'
export type { RateLimitHandler, RateLimitOptions, RateLimitPlan } from './rate-limit.js'
export { createRateLimitHandler } from './rate-limit.js'
export type { Message, ResponseBody } from './response.js'
export { sleep } from './response.js'
export type { NodeResponse } from './stream.js'
export { onResponseDone, onStreamDone } from './stream.js'
