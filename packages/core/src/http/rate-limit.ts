import type { Decision } from '../decision.js'
import { ConfigError } from '../errors.js'
import { createLimiter, type Limiter, type LimiterOptions } from '../limiter.js'
import { capacityOf } from '../policy.js'
import { type Awaitable, isThenable } from '../store.js'
import {
  type HeaderEntry,
  type HeaderMode,
  type HeadersOption,
  headerModeOption,
  rateLimitHeaders,
  retryAfterHeader,
} from './headers.js'
import {
  type Adapter,
  assertKnownOptions,
  assertObject,
  COMMON_OPTIONS,
  type CommonOptions,
  parseCommon,
} from './options.js'
import { rateLimitProblem } from './problem.js'
import { type DenyPlan, denialResponse, SKIP, sleep } from './response.js'

/** `rateLimit()` options of every adapter; `A` is the framework's handler arguments, `R` what onLimited returns. */
export interface RateLimitOptions<A extends unknown[], R = unknown>
  extends Partial<LimiterOptions>,
    CommonOptions<A, Decision, R> {
  /** A limiter built with `createLimiter`, to share one across routes; replaces the limiter options. */
  limiter?: Limiter
  /** Units this request takes: a number or a function of the request. Default 1. */
  cost?: number | ((...args: A) => Awaitable<number>)
  /** Which rate-limit headers to send. Default `'draft-11'`. */
  headers?: HeadersOption
  /** Give back what a request took once its response succeeded (see `requestWasSuccessful`). */
  skipSuccessfulRequests?: boolean
  /** Give back what a request took once its response failed, or never completed. */
  skipFailedRequests?: boolean
  /** Whether a completed response succeeded. Default: its status is below 400. */
  requestWasSuccessful?: (...args: A) => Awaitable<boolean>
}

const LIMITER_OPTIONS = ['limits', 'store', 'onStoreError', 'timeout', 'maxDelay'] as const
const SETTLE_OPTIONS = ['skipSuccessfulRequests', 'skipFailedRequests', 'requestWasSuccessful']
const RATE_LIMIT_OPTIONS = [...LIMITER_OPTIONS, 'limiter', 'cost', 'headers', ...SETTLE_OPTIONS, ...COMMON_OPTIONS]

/**
 * What an adapter does with one request. `skip`: call the next handler, nothing else.
 * `continue`: set `headers`, expose `decision`, call the next handler (any shaping delay has
 * already been waited). `deny`: expose `decision`, set `status` and `headers`, then either send
 * `response` (a body) or call it (the user's onLimited); never call the next handler.
 */
export type RateLimitPlan<R> =
  | typeof SKIP
  | {
      readonly kind: 'continue'
      readonly decision: Decision
      readonly headers: readonly HeaderEntry[]
      /** Milliseconds the request was held for shaping. */
      readonly delay: number
      /**
       * Present when skipSuccessfulRequests or skipFailedRequests may give this request's cost
       * back: call it once the response is done, `completed` false when it never completed (the
       * client went away, the handler threw). Extra calls do nothing; it never throws or rejects.
       */
      readonly settle: ((completed: boolean) => void) | undefined
    }
  | (DenyPlan<R> & { readonly decision: Decision })

export interface RateLimitHandler<A extends unknown[], R> {
  readonly limiter: Limiter
  readonly headers: HeaderMode | false
  plan(...args: A): Promise<RateLimitPlan<R>>
}

/**
 * Validates an adapter's `rateLimit()` options once, at construction, and returns the per-request
 * planner that holds all of the limiting logic, so that adapters only translate.
 */
export function createRateLimitHandler<A extends unknown[], R>(
  options: RateLimitOptions<A, R>,
  adapter: Adapter<A>,
): RateLimitHandler<A, R> {
  assertObject(options, "{ limits: ['100/min', '2/s'] }")
  const raw = options as Record<string, unknown>
  assertKnownOptions(raw, [...RATE_LIMIT_OPTIONS, ...(adapter.extraOptions ?? [])], 'rateLimit()')
  const common = parseCommon<A, Decision, R>(raw, adapter)
  const limiter = limiterOf(options)
  const headers = headerModeOption(options.headers)
  const cost = costOf(options.cost, limiter)
  const refundRule = refundRuleOf(options, limiter, adapter)
  const { key, skip, statusCode, dryRun } = common

  return {
    limiter,
    headers,
    async plan(...args) {
      if (skip && (await skip(...args))) return SKIP
      const requestKey = await key(...args)
      const units = typeof cost === 'function' ? await cost(...args) : cost
      // The limiter reads a missing cost as 1: a function that returns nothing is a bug to report.
      if (typeof units !== 'number') throw new ConfigError('cost', units, 'must return a number of units')
      const decision = await limiter.consume(requestKey, { cost: units })
      const entries = rateLimitHeaders(decision, headers)
      if (decision.allowed || dryRun) {
        const delay = dryRun ? 0 : decision.delay
        if (delay > 0) await sleep(delay)
        // Only what the store took can be given back: not a fallback's count, not an error's admission.
        const settle =
          refundRule && decision.allowed && decision.source === 'store'
            ? settlerOf(limiter, requestKey, units, refundRule, args)
            : undefined
        return { kind: 'continue', decision, headers: entries, delay, settle }
      }
      entries.push(retryAfterHeader(decision.retryAfter))
      const response = await denialResponse(common, args, decision, () => rateLimitProblem(decision, statusCode))
      return { kind: 'deny', decision, status: statusCode, headers: entries, response }
    },
  }
}

function limiterOf(options: RateLimitOptions<unknown[], unknown>): Limiter {
  const { limiter } = options
  if (limiter === undefined) {
    if (options.limits === undefined) {
      throw new ConfigError(
        'limits',
        undefined,
        "are required, e.g. limits: ['100/min', '2/s'] (or pass a prebuilt limiter)",
      )
    }
    const { limits, store, onStoreError, timeout, maxDelay } = options
    return createLimiter({ limits, store, onStoreError, timeout, maxDelay })
  }
  const candidate = limiter as Partial<Limiter> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.consume !== 'function' ||
    !Array.isArray(candidate.policies)
  ) {
    throw new ConfigError('limiter', limiter, 'must be a limiter made by createLimiter()')
  }
  for (const field of LIMITER_OPTIONS) {
    if (options[field] !== undefined) {
      throw new ConfigError(field, options[field], 'belongs to the prebuilt limiter: set it in createLimiter() instead')
    }
  }
  return limiter
}

function costOf<A extends unknown[]>(cost: unknown, limiter: Limiter): number | ((...args: A) => Awaitable<number>) {
  if (cost === undefined) return 1
  if (typeof cost === 'function') return cost as (...args: A) => Awaitable<number>
  const most = Math.min(...limiter.policies.map(capacityOf))
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > most) {
    throw new ConfigError('cost', cost, `must be a whole number from 1 to ${most}, or a function of the request`)
  }
  return cost
}

/** Which outcome gives a request's cost back: a response that succeeded, or one that failed. */
interface RefundRule<A extends unknown[]> {
  readonly refundSucceeded: boolean
  readonly succeeded: (...args: A) => Awaitable<boolean>
}

function refundRuleOf<A extends unknown[]>(
  options: RateLimitOptions<A, unknown>,
  limiter: Limiter,
  adapter: Adapter<A>,
): RefundRule<A> | undefined {
  const { skipSuccessfulRequests = false, skipFailedRequests = false, requestWasSuccessful } = options
  if (typeof skipSuccessfulRequests !== 'boolean') {
    throw new ConfigError('skipSuccessfulRequests', skipSuccessfulRequests, 'must be true or false')
  }
  if (typeof skipFailedRequests !== 'boolean') {
    throw new ConfigError('skipFailedRequests', skipFailedRequests, 'must be true or false')
  }
  if (requestWasSuccessful !== undefined && typeof requestWasSuccessful !== 'function') {
    throw new ConfigError('requestWasSuccessful', requestWasSuccessful, 'must be a function of the request')
  }
  if (!skipSuccessfulRequests && !skipFailedRequests) {
    if (requestWasSuccessful !== undefined) {
      throw new ConfigError(
        'requestWasSuccessful',
        requestWasSuccessful,
        'does nothing without skipSuccessfulRequests or skipFailedRequests',
      )
    }
    return undefined
  }
  const field = skipSuccessfulRequests ? 'skipSuccessfulRequests' : 'skipFailedRequests'
  if (skipSuccessfulRequests && skipFailedRequests) {
    throw new ConfigError(field, true, 'cannot be used with skipFailedRequests: every request would be given back')
  }
  if (!limiter.canRefund) {
    throw new ConfigError(field, true, "needs a store that can refund (MemoryStore, RedisStore); the limiter's cannot")
  }
  return {
    refundSucceeded: skipSuccessfulRequests,
    succeeded: requestWasSuccessful ?? ((...args: A) => adapter.status(...args) < 400),
  }
}

/**
 * The once-only `settle` of one admitted request. A refund that fails (the store is down, a
 * timeout, requestWasSuccessful threw) is dropped: the request keeps counting, which errs on
 * the side of limiting, and nothing is left to reject unhandled.
 */
function settlerOf<A extends unknown[]>(
  limiter: Limiter,
  key: string,
  cost: number,
  rule: RefundRule<A>,
  args: A,
): (completed: boolean) => void {
  let settled = false
  const refundIf = (succeeded: boolean): void => {
    if (succeeded === rule.refundSucceeded) limiter.refund(key, { cost }).catch(ignore)
  }
  return (completed) => {
    if (settled) return
    settled = true
    if (!completed) {
      refundIf(false)
      return
    }
    let verdict: Awaitable<boolean>
    try {
      verdict = rule.succeeded(...args)
    } catch {
      return
    }
    if (isThenable(verdict)) verdict.then((value) => refundIf(value === true), ignore)
    else refundIf(verdict === true)
  }
}

function ignore(): void {}
