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
export type { ConcurrencyInfo, ConcurrencyLimitOptions } from './concurrency.js'
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
export type { CommonOptions } from './options.js'
export type { ProblemDetails } from './problem.js'
export {
  concurrencyProblem,
  PROBLEM_CONTENT_TYPE,
  QUOTA_EXCEEDED,
  rateLimitProblem,
  STORE_UNAVAILABLE,
  storeUnavailableProblem,
  TEMPORARY_REDUCED_CAPACITY,
} from './problem.js'
export type { RateLimitOptions } from './rate-limit.js'
export type { RequestKey } from './request-key.js'
export type { Message, ResponseBody } from './response.js'
