import { ConfigError } from '../diagnostics/errors.js'
import { refundsNeeded, type Warnings } from '../diagnostics/validations.js'
import type { Decision } from '../limiter/decision.js'
import {
  consumeNowOf,
  createLimiter,
  LIMITER_OPTION_NAMES,
  type Limiter,
  type LimiterOptions,
  StoreLimiter,
} from '../limiter/limiter.js'
import { capacityOf } from '../policies/policy.js'
import { type Awaitable, andThen, isThenable, type Store } from '../stores/contract.js'
import {
  type Adapter,
  assertKnownOptions,
  assertObject,
  COMMON_OPTIONS,
  type CommonOptions,
  errorStatusOption,
  parseCommon,
} from './common-options.js'
import {
  type HeaderEntry,
  type HeaderMode,
  type HeadersOption,
  headerModeOption,
  rateLimitHeaderWriter,
  retryAfterHeader,
} from './headers.js'
import { rateLimitProblem, storeUnavailableProblem } from './problem.js'
import { type DenyPlan, denialResponse, SKIP, sleep } from './response.js'

/** `rateLimit()` options of every adapter; `A` is the framework's handler arguments, `R` what onLimited returns. */
export interface RateLimitOptions<A extends unknown[], R = unknown>
  extends Partial<LimiterOptions>,
    CommonOptions<A, Decision, R> {
  /**
   * A limiter built with `createLimiter`, to share one across routes; replaces the limiter options.
   * Or a function of the request that picks one, for limits that differ per request (plans, tiers).
   */
  limiter?: Limiter | ((...args: A) => Awaitable<Limiter>)
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
  /**
   * What the request really cost, read once its response is done (from a header, `res.locals`
   * or `c.var` the handler set): the difference from `cost` is settled for you
   * (`limiter.settle`), given back into the window the request was admitted in or charged
   * below zero. Return undefined to keep the reserved cost.
   */
  actualCost?: (...args: A) => Awaitable<number | undefined>
  /**
   * Where the decision is exposed: `req[name]` (Express), `ctx.state[name]` (Koa),
   * `c.get(name)` (Hono). Default `'rateLimit'`; give stacked limiters their own names so one
   * does not overwrite the other's (express-rate-limit's option of the same name).
   */
  requestPropertyName?: string
  /**
   * Status of a denial by `onStoreError: 'deny'` (the store failed; no limit was exceeded).
   * Default 503, with `Retry-After` and a problem body of type `STORE_UNAVAILABLE`.
   */
  storeErrorStatusCode?: number
}

const SETTLE_OPTIONS = ['skipSuccessfulRequests', 'skipFailedRequests', 'requestWasSuccessful', 'actualCost']
/** Hints only rateLimit() gives: it can pick a limiter per request. */
const RATE_LIMIT_HINTS = {
  limit: "set the limit in limits, e.g. limits: ['100/15min']; for limits per request, limiter: (request) => a limiter",
}
const RATE_LIMIT_OPTIONS = [
  ...LIMITER_OPTION_NAMES,
  'limiter',
  'cost',
  'headers',
  'requestPropertyName',
  'storeErrorStatusCode',
  ...SETTLE_OPTIONS,
  ...COMMON_OPTIONS,
]

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

/** What `createRateLimitHandler` returns: the per-request planner an adapter calls. */
export interface RateLimitHandler<A extends unknown[], R> {
  /** The one limiter of every request; undefined when `limiter` is a function of the request. */
  readonly limiter: Limiter | undefined
  readonly headers: HeaderMode | false
  /** Where the adapter exposes the decision (see `requestPropertyName`). */
  readonly property: string
  /**
   * The plan for one request: a value when every step was synchronous (a memory store and
   * synchronous options), so that the adapter can go on in the same tick; otherwise a promise.
   * Never throws: an error comes back as a rejected promise.
   */
  plan(...args: A): Awaitable<RateLimitPlan<R>>
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
  assertKnownOptions(raw, [...RATE_LIMIT_OPTIONS, ...(adapter.extraOptions ?? [])], 'rateLimit()', RATE_LIMIT_HINTS)
  const common = parseCommon<A, Decision, R>(raw, adapter)
  const choice = limiterOf(options)
  const headers = headerModeOption(options.headers)
  const fixed = typeof choice === 'function' ? undefined : prepare(choice, headers)
  // Only a checked limiter is recorded as using its policies: one with the check off is never blamed.
  if (fixed && common.warnings.enabled('SLUICE_SHARED_POLICY')) {
    const policy = sharedPolicyOf(fixed.limiter)
    if (policy !== undefined) common.warnings.sharedPolicy(policy)
  }
  const cost = costOf(options.cost, fixed?.limiter)
  const refundRule = refundRuleOf(options, fixed?.limiter, adapter, common.warnings)
  const fixedCost = typeof cost === 'number' ? { cost } : undefined
  const { key, skip, statusCode, dryRun } = common
  const storeErrorStatusCode = errorStatusOption('storeErrorStatusCode', options.storeErrorStatusCode ?? 503)

  /** Limiters a `limiter` function picked, each prepared once. */
  const chosen = new WeakMap<Limiter, Prepared>()
  const preparedFor = (args: A): Awaitable<Prepared> =>
    fixed ??
    andThen((choice as (...args: A) => Awaitable<Limiter>)(...args), (limiter) => {
      let prepared = chosen.get(limiter)
      if (prepared === undefined) {
        assertLimiter(limiter, 'must return a limiter made by createLimiter()')
        if (refundRule && !limiter.canRefund) {
          throw new ConfigError(
            'limiter',
            limiter,
            `returned a limiter whose store cannot refund, which ${refundRule.field} needs`,
          )
        }
        prepared = prepare(limiter, headers)
        chosen.set(limiter, prepared)
      }
      return prepared
    })

  // The steps below go on at once when a step answered with a value and chain only on a promise
  // (as andThen does), without a closure per step on the usual synchronous path.
  const keyed = (args: A): Awaitable<RateLimitPlan<R>> => {
    const requestKey = key(...args)
    return isThenable(requestKey)
      ? Promise.resolve(requestKey).then((value) => costed(args, value))
      : costed(args, requestKey)
  }

  const costed = (args: A, requestKey: string): Awaitable<RateLimitPlan<R>> => {
    if (typeof cost === 'number') return consume(args, requestKey, cost)
    const units = cost(...args)
    return isThenable(units)
      ? Promise.resolve(units).then((value) => consume(args, requestKey, value))
      : consume(args, requestKey, units)
  }

  const consume = (args: A, requestKey: string, units: unknown): Awaitable<RateLimitPlan<R>> => {
    // The limiter reads a missing cost as 1: a function that returns nothing is a bug to report.
    if (typeof units !== 'number') throw new ConfigError('cost', units, 'must return a number of units')
    if (fixed !== undefined) return decided(args, fixed, requestKey, units)
    return andThen(preparedFor(args), (prepared) => decided(args, prepared, requestKey, units))
  }

  const decided = (args: A, prepared: Prepared, requestKey: string, units: number): Awaitable<RateLimitPlan<R>> => {
    const decision = prepared.consumeNow(requestKey, fixedCost ?? { cost: units })
    return isThenable(decision)
      ? Promise.resolve(decision).then((value) => planFor(args, prepared, requestKey, units, value))
      : planFor(args, prepared, requestKey, units, decision)
  }

  const planFor = (
    args: A,
    { limiter, headersFor }: Prepared,
    requestKey: string,
    units: number,
    decision: Decision,
  ): Awaitable<RateLimitPlan<R>> => {
    if (!decision.allowed && !dryRun && decision.source === 'error') return storeUnavailable(args, decision)
    const entries = headersFor(decision)
    if (decision.allowed || dryRun) {
      const delay = dryRun ? 0 : decision.delay
      // Only what the store took can be given back: not a fallback's count, not an error's admission.
      const settle =
        refundRule && decision.allowed && decision.source === 'store'
          ? settlerOf(limiter, requestKey, units, refundRule, args)
          : undefined
      const plan = { kind: 'continue', decision, headers: entries, delay, settle } as const
      return delay > 0 ? sleep(delay).then(() => plan) : plan
    }
    entries.push(retryAfterHeader(decision.retryAfter))
    return denialResponse(common, args, decision, () => rateLimitProblem(decision, statusCode)).then((denial) => ({
      kind: 'deny',
      decision,
      status: statusCode,
      headers: entries,
      ...denial,
    }))
  }

  /**
   * `onStoreError: 'deny'`: no policy was looked at, so no RateLimit headers (they would report a
   * quota nobody read), only when to come back.
   */
  const storeUnavailable = (args: A, decision: Decision): Promise<RateLimitPlan<R>> =>
    denialResponse(common, args, decision, () => storeUnavailableProblem(decision, storeErrorStatusCode)).then(
      (denial) => ({
        kind: 'deny',
        decision,
        status: storeErrorStatusCode,
        headers: [retryAfterHeader(decision.retryAfter)],
        ...denial,
      }),
    )

  return {
    limiter: fixed?.limiter,
    headers,
    property: propertyNameOf(options.requestPropertyName),
    // Not async, and chained only where a step returns a promise: with synchronous options and a
    // memory store (the usual case) a request takes no promise hop at all.
    plan(...args) {
      try {
        if (skip === undefined) return keyed(args)
        const skipped = skip(...args)
        if (isThenable(skipped)) return Promise.resolve(skipped).then((value) => (value ? SKIP : keyed(args)))
        return skipped ? SKIP : keyed(args)
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}

function propertyNameOf(name: unknown): string {
  if (name === undefined) return 'rateLimit'
  if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(name) || name === '__proto__' || name === 'constructor') {
    throw new ConfigError('requestPropertyName', name, "must be a plain identifier such as 'rateLimit' or 'loginLimit'")
  }
  return name
}

/** A limiter with its header writer, which serialises what the policies alone decide once. */
interface Prepared {
  readonly limiter: Limiter
  readonly consumeNow: ReturnType<typeof consumeNowOf>
  readonly headersFor: (decision: Decision) => HeaderEntry[]
}

function prepare(limiter: Limiter, headers: HeaderMode | false): Prepared {
  return { limiter, consumeNow: consumeNowOf(limiter), headersFor: rateLimitHeaderWriter(limiter.policies, headers) }
}

function assertLimiter(limiter: unknown, expectation: string): asserts limiter is Limiter {
  const candidate = limiter as Partial<Limiter> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.consume !== 'function' ||
    !Array.isArray(candidate.policies)
  ) {
    throw new ConfigError('limiter', limiter, expectation)
  }
}

function limiterOf<A extends unknown[]>(
  options: RateLimitOptions<A, unknown>,
): Limiter | ((...args: A) => Awaitable<Limiter>) {
  const { limiter } = options
  if (limiter === undefined) {
    if (options.limits === undefined) {
      throw new ConfigError(
        'limits',
        undefined,
        "are required, e.g. limits: ['100/min', '2/s'] (or pass a prebuilt limiter)",
      )
    }
    const { limits, store, onStoreError, timeout, maxDelay, namespace, breaker, observe, validate } = options
    return createLimiter({ limits, store, onStoreError, timeout, maxDelay, namespace, breaker, observe, validate })
  }
  if (typeof limiter !== 'function') {
    assertLimiter(limiter, 'must be a limiter made by createLimiter(), or a function of the request returning one')
  }
  for (const field of LIMITER_OPTION_NAMES) {
    // validate is the middleware's too: with a prebuilt limiter it switches the middleware's warnings.
    if (field !== 'validate' && options[field] !== undefined) {
      throw new ConfigError(field, options[field], 'belongs to the prebuilt limiter: set it in createLimiter() instead')
    }
  }
  return limiter
}

/** A fixed cost is checked against the limiter's policies here, or by each chosen limiter's consume. */
function costOf<A extends unknown[]>(
  cost: unknown,
  limiter: Limiter | undefined,
): number | ((...args: A) => Awaitable<number>) {
  if (cost === undefined) return 1
  if (typeof cost === 'function') return cost as (...args: A) => Awaitable<number>
  const most = limiter === undefined ? Number.MAX_SAFE_INTEGER : Math.min(...limiter.policies.map(capacityOf))
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > most) {
    throw new ConfigError('cost', cost, `must be a whole number from 1 to ${most}, or a function of the request`)
  }
  return cost
}

/** Which outcome gives a request's cost back: a response that succeeded, or one that failed. */
/** What becomes of an admitted request's cost once its response is done (see `settlerOf`). */
interface AfterResponse<A extends unknown[]> {
  /** The option that asked for it, for messages. */
  readonly field: 'skipSuccessfulRequests' | 'skipFailedRequests' | 'actualCost'
  /** Settles `reserved` units with the limiter; `completed` false when the response never completed. */
  readonly settle: (
    limiter: Limiter,
    key: string,
    reserved: number,
    admittedAt: number | undefined,
    completed: boolean,
    args: A,
  ) => void
}

function refundRuleOf<A extends unknown[]>(
  options: RateLimitOptions<A, unknown>,
  limiter: Limiter | undefined,
  adapter: Adapter<A>,
  warnings: Warnings,
): AfterResponse<A> | undefined {
  const { skipSuccessfulRequests = false, skipFailedRequests = false, requestWasSuccessful, actualCost } = options
  if (typeof skipSuccessfulRequests !== 'boolean') {
    throw new ConfigError('skipSuccessfulRequests', skipSuccessfulRequests, 'must be true or false')
  }
  if (typeof skipFailedRequests !== 'boolean') {
    throw new ConfigError('skipFailedRequests', skipFailedRequests, 'must be true or false')
  }
  if (requestWasSuccessful !== undefined && typeof requestWasSuccessful !== 'function') {
    throw new ConfigError('requestWasSuccessful', requestWasSuccessful, 'must be a function of the request')
  }
  if (actualCost !== undefined)
    return actualCostRuleOf(actualCost, skipSuccessfulRequests || skipFailedRequests, limiter, warnings)
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
  // A limiter that a function picks is checked when it is first picked.
  if (limiter !== undefined && !limiter.canRefund) {
    throw refundsNeeded(field, true)
  }
  const succeeded = requestWasSuccessful ?? ((...args: A) => adapter.status(...args) < 400)
  return {
    field,
    settle(limiter, key, cost, admittedAt, completed, args) {
      const refundIf = (success: boolean): void => {
        if (success === skipSuccessfulRequests) limiter.refund(key, { cost, admittedAt }).catch(ignore)
      }
      if (!completed) {
        refundIf(false)
        return
      }
      let verdict: Awaitable<boolean>
      try {
        verdict = succeeded(...args)
      } catch {
        return
      }
      if (isThenable(verdict)) verdict.then((value) => refundIf(value === true), ignore)
      else refundIf(verdict === true)
    },
  }
}

/**
 * `actualCost`: once the response is done (or never completed: work may have been spent all the
 * same), its units are settled against the cost the request was admitted on (`limiter.settle`).
 * A function that returns undefined, or throws, or returns what is no cost, leaves the
 * reservation as it stands: the response has gone, so there is nobody left to tell but the log
 * (SLUICE_ACTUAL_COST_FAILED).
 */
function actualCostRuleOf<A extends unknown[]>(
  actualCost: unknown,
  withSkip: boolean,
  limiter: Limiter | undefined,
  warnings: Warnings,
): AfterResponse<A> {
  if (typeof actualCost !== 'function') {
    throw new ConfigError('actualCost', actualCost, 'must be a function of the request and response that returns units')
  }
  if (withSkip) {
    throw new ConfigError(
      'actualCost',
      actualCost,
      'cannot be used with skipSuccessfulRequests or skipFailedRequests: return 0 from it to give a request back',
    )
  }
  if (limiter !== undefined && !limiter.canRefund) throw refundsNeeded('actualCost', actualCost)
  const read = actualCost as (...args: A) => Awaitable<number | undefined>
  return {
    field: 'actualCost',
    settle(limiter, key, reserved, admittedAt, _completed, args) {
      const settleWith = (actual: number | undefined): void => {
        if (actual === undefined) return
        limiter.settle(key, { reserved, actual, admittedAt }).catch((error: unknown) => {
          warnings.actualCostFailed(`returned ${String(actual)}, which cannot be settled`, error)
        })
      }
      let actual: Awaitable<number | undefined>
      try {
        actual = read(...args)
      } catch (error) {
        warnings.actualCostFailed('threw', error)
        return
      }
      if (isThenable(actual)) {
        actual.then(settleWith, (error: unknown) => warnings.actualCostFailed('rejected', error))
      } else settleWith(actual)
    },
  }
}

function settlerOf<A extends unknown[]>(
  limiter: Limiter,
  key: string,
  cost: number,
  rule: AfterResponse<A>,
  args: A,
): (completed: boolean) => void {
  let settled = false
  // Read now, when the decision has just come: the refund then never reaches into a later window.
  const admittedAt = typeof limiter.clock === 'function' ? limiter.clock() : undefined
  return (completed) => {
    if (settled) return
    settled = true
    rule.settle(limiter, key, cost, admittedAt, completed, args)
  }
}

function ignore(): void {}

/** Per store, per policy id: the first limiter without a namespace that a middleware used it with. */
const policiesInUse = new WeakMap<Store, Map<string, Limiter>>()

/**
 * Records `limiter` as used by a middleware and returns the name of a policy that another
 * limiter without a namespace already uses on the same store, so both count every request
 * together (a global '10/min' plus a route '10/min' counts twice). Undefined when there is none,
 * when the limiter has a namespace, or when it was not made by createLimiter.
 */
function sharedPolicyOf(limiter: Limiter): string | undefined {
  if (!(limiter instanceof StoreLimiter) || limiter.namespace !== undefined) return undefined
  let seen = policiesInUse.get(limiter.store)
  if (seen === undefined) {
    seen = new Map()
    policiesInUse.set(limiter.store, seen)
  }
  let shared: string | undefined
  for (const policy of limiter.set.policies) {
    const first = seen.get(policy.id)
    if (first === undefined) seen.set(policy.id, limiter)
    else if (first !== limiter) shared ??= policy.name
  }
  return shared
}
