import type { Decision } from '../limiter/decision.js'
import { retryAfterSeconds } from './headers.js'

/** The media type of RFC 9457 problem details. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json'
/** The IETF RateLimit draft's problem types (draft-11 §5), not yet in the IANA registry. */
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded'
/** The problem type of a concurrency limit or an unavailable store (the draft's temporary-reduced-capacity). */
export const TEMPORARY_REDUCED_CAPACITY = 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity'
/**
 * sluice's own problem type for `onStoreError: 'deny'`: the limiter could not reach its store, so
 * nobody's quota was looked at. A tag URI (RFC 4151), as RFC 9457 suggests for types that are
 * not meant to be dereferenced.
 */
export const STORE_UNAVAILABLE = 'tag:sluice.dev,2026:problem:store-unavailable'

/** RFC 9457 problem details, with the draft's `violated-policies` extension. */
export interface ProblemDetails {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
  readonly 'violated-policies': readonly string[]
}

const TITLES: Readonly<Record<number, string>> = {
  403: 'Forbidden',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
}

/** A 503 says the server is short of capacity; anything else says the client used up its quota. */
function problemType(status: number): string {
  return status === 503 ? TEMPORARY_REDUCED_CAPACITY : QUOTA_EXCEEDED
}

function titleOf(status: number): string {
  return TITLES[status] ?? 'Too Many Requests'
}

/** The body of a rate-limit denial: which policies refused and when to come back. */
export function rateLimitProblem(decision: Decision, status = 429): ProblemDetails {
  const violated = decision.policies.filter((p) => !p.allowed).map((p) => p.name)
  const seconds = retryAfterSeconds(decision.retryAfter)
  const which = violated.length === 1 ? `the ${violated[0]} limit` : `the ${violated.join(', ')} limits`
  return {
    type: problemType(status),
    title: titleOf(status),
    status,
    detail: `Too many requests: ${which} would be exceeded. Retry in ${seconds} second${seconds === 1 ? '' : 's'}.`,
    'violated-policies': violated,
  }
}

/** The body of a concurrency denial. */
export function concurrencyProblem(name: string, limit: number, status = 429): ProblemDetails {
  return {
    type: problemType(status),
    title: titleOf(status),
    status,
    detail: `Too many requests in flight: at most ${limit} at a time. Retry when one finishes.`,
    'violated-policies': [name],
  }
}

/** The body of a denial by `onStoreError: 'deny'`: the store failed, no limit was exceeded. */
export function storeUnavailableProblem(decision: Decision, status = 503): ProblemDetails {
  const seconds = retryAfterSeconds(decision.retryAfter)
  return {
    type: STORE_UNAVAILABLE,
    title: 'Rate limit store unavailable',
    status,
    detail:
      "The rate limiter's store is unavailable, so the request could not be checked against its limits. " +
      `Retry in ${seconds} second${seconds === 1 ? '' : 's'}.`,
    'violated-policies': [],
  }
}

/** The body of a refusal by adaptive concurrency: the service, not the client, is short of capacity. */
export function overloadProblem(name: string, limit: number, status = 503): ProblemDetails {
  return {
    type: problemType(status),
    title: titleOf(status),
    status,
    detail: `The service is at capacity: at most ${limit} requests at a time for now. Retry after a short wait.`,
    'violated-policies': [name],
  }
}
