import { ConfigError } from '../diagnostics/errors.js'
import type { OverloadRefusal } from '../diagnostics/observe.js'
import {
  ADAPTIVE_LIMITER_OPTIONS,
  type AdaptiveLimiterOptions,
  type DelayHistogram,
} from '../overload/adaptive-options.js'
import { type AdaptiveLimiter, createAdaptiveLimiter } from '../overload/controller.js'
import { toMilliseconds } from '../policies/duration.js'
import { type Awaitable, andThen, isThenable } from '../stores/contract.js'
import { type Adapter, assertKnownOptions, assertObject, type CommonOptions, parseCommon } from './common-options.js'
import {
  concurrencyHeaders,
  type HeaderEntry,
  type HeaderMode,
  type HeadersOption,
  headerModeOption,
  retryAfterHeader,
  sfString,
} from './headers.js'
import { overloadProblem } from './problem.js'
import { type DenyPlan, denialResponse, SKIP } from './response.js'

/** What `message` and `onLimited` of adaptive concurrency receive about the refusal. */
export interface OverloadInfo {
  readonly name: string
  /** The request's class (`priority`'s answer, or the last class). */
  readonly class: string
  readonly reason: OverloadRefusal
  /** The limit when the request was refused. */
  readonly limit: number
  /** Milliseconds it waited in the queue. */
  readonly waitedMs: number
}

/** `adaptiveConcurrency()` options every adapter shares; `A` is the framework's handler arguments. */
export interface AdaptiveConcurrencyOptions<A extends unknown[], R = unknown>
  extends AdaptiveLimiterOptions,
    Omit<CommonOptions<A, OverloadInfo, R>, 'key' | 'ipv6Subnet'> {
  /**
   * A limiter made with `createAdaptiveLimiter`, to share one limit between middleware (or with
   * work outside HTTP) and read its `stats()`. The limiter's own options are then not accepted here.
   */
  limiter?: AdaptiveLimiter
  /** The request's class, one of `classes` (a name not listed counts as the last class). Default: the last class. */
  priority?: (...args: A) => string | undefined
  /**
   * `'draft-11'` sends the limit and the slots left as RateLimit headers (quota unit
   * `"concurrent-requests"`). Default false: the limit is the service's, not the client's, and
   * moves every window.
   */
  headers?: HeadersOption
  /** The Retry-After of a refusal: a duration (whole seconds, at least 1), or false for none. Default `'1s'`. */
  retryAfter?: number | string | false
  /** Status of a refusal. Default 503 (the service is short of capacity); 429 where clients handle only that. */
  statusCode?: number
}

const MIDDLEWARE_OPTIONS = [
  'limiter',
  'priority',
  'headers',
  'retryAfter',
  'skip',
  'statusCode',
  'message',
  'onLimited',
  'dryRun',
  'validate',
] as const

/**
 * `continue`: set `headers`, call the next handler, and call `release(completed)` once the
 * response is finished (true) or the client left before that (false: a client that gave up is
 * a sign of overload); extra calls do nothing. `deny`: as for rate limits.
 */
export type AdaptivePlan<R> =
  | typeof SKIP
  | {
      readonly kind: 'continue'
      readonly headers: readonly HeaderEntry[]
      readonly release: (completed: boolean) => void
    }
  | (DenyPlan<R> & { readonly info: OverloadInfo })

/** What `createAdaptiveHandler` returns: the per-request planner an adapter calls. */
export interface AdaptiveHandler<A extends unknown[], R> {
  /** The controller: `limit`, `inflight`, `stats()`. */
  readonly limiter: AdaptiveLimiter
  readonly headers: HeaderMode | false
  /** A value when the request was admitted or refused at once, a promise when it waited; never a throw. */
  plan(...args: A): Awaitable<AdaptivePlan<R>>
}

/** `eventLoopDelay` in the Node adapters: a `threshold` alone, the histogram made by the adapter. */
export interface NodeEventLoopDelay {
  threshold: number | string
  histogram?: DelayHistogram
}

/** Node's `monitorEventLoopDelay`, passed in by a Node adapter: core imports nothing of Node. */
export type MonitorEventLoopDelay = (options: { resolution: number }) => DelayHistogram & { enable(): unknown }

/**
 * `options` with an enabled event-loop delay histogram from `monitor` when `eventLoopDelay` gives
 * only a threshold; anything else goes on as it is, for the options' validation to judge.
 */
export function withEventLoopHistogram<T extends { eventLoopDelay?: NodeEventLoopDelay }>(
  options: T,
  monitor: MonitorEventLoopDelay,
): T & { eventLoopDelay?: { threshold: number | string; histogram: DelayHistogram } } {
  const delay = options?.eventLoopDelay
  if (delay === null || typeof delay !== 'object' || delay.histogram !== undefined) return options as never
  const histogram = monitor({ resolution: 10 })
  histogram.enable()
  return { ...options, eventLoopDelay: { ...delay, histogram } }
}

const NOTHING_TO_RELEASE = (): void => {}

/** Validates `adaptiveConcurrency()` options once and returns the per-request planner, so adapters only translate. */
export function createAdaptiveHandler<A extends unknown[], R>(
  options: AdaptiveConcurrencyOptions<A, R>,
  adapter: Adapter<A>,
): AdaptiveHandler<A, R> {
  assertObject(options, "{ algorithm: 'gradient2', max: 200 }")
  const raw = options as unknown as Record<string, unknown>
  const known = [...ADAPTIVE_LIMITER_OPTIONS, ...MIDDLEWARE_OPTIONS, ...(adapter.extraOptions ?? [])]
  assertKnownOptions(raw, known, 'adaptiveConcurrency()')
  const shared = raw.limiter as Partial<AdaptiveLimiter> | undefined
  if (shared !== undefined) {
    if (shared === null || typeof shared.acquire !== 'function') {
      throw new ConfigError('limiter', shared, 'must be a limiter made by createAdaptiveLimiter()')
    }
    const own = ADAPTIVE_LIMITER_OPTIONS.find((name) => raw[name] !== undefined)
    if (own !== undefined) {
      throw new ConfigError(
        own,
        raw[own],
        'belongs to the limiter: set it in createAdaptiveLimiter() when passing limiter',
      )
    }
  }
  const limiter = (shared as AdaptiveLimiter | undefined) ?? createAdaptiveLimiter(limiterOptions(raw))
  const priority = raw.priority as AdaptiveConcurrencyOptions<A, R>['priority']
  if (priority !== undefined && typeof priority !== 'function') {
    throw new ConfigError(
      'priority',
      priority,
      "must be a function of the request returning its class, e.g. 'critical'",
    )
  }
  const name = limiter.name
  sfString(name)
  const headers = raw.headers === undefined ? false : headerModeOption(raw.headers)
  const retryAfter =
    raw.retryAfter === false
      ? undefined
      : retryAfterHeader(raw.retryAfter === undefined ? 1000 : toMilliseconds('retryAfter', raw.retryAfter))
  const common = parseCommon<A, OverloadInfo, R>({ ...raw, statusCode: raw.statusCode ?? 503 }, adapter)
  const { skip, statusCode, dryRun } = common

  const planFor = (args: A): Awaitable<AdaptivePlan<R>> => {
    const className = priority?.(...args)
    const result = limiter.acquire(className)
    return andThen(result, (outcome): Awaitable<AdaptivePlan<R>> => {
      if (outcome.admitted) {
        const available = limiter.limit - limiter.inflight
        return {
          kind: 'continue',
          headers: concurrencyHeaders(name, limiter.limit, available, headers),
          release: (completed) => outcome.release(completed ? 'success' : 'dropped'),
        }
      }
      const entries = concurrencyHeaders(name, outcome.limit, 0, headers)
      if (dryRun) return { kind: 'continue', headers: entries, release: NOTHING_TO_RELEASE }
      const info: OverloadInfo = {
        name,
        class: outcome.class,
        reason: outcome.reason,
        limit: outcome.limit,
        waitedMs: outcome.waitedMs,
      }
      return denialResponse(common, args, info, () => overloadProblem(name, outcome.limit, statusCode)).then(
        (denial) => ({
          kind: 'deny',
          info,
          status: statusCode,
          headers: retryAfter === undefined ? entries : [...entries, retryAfter],
          ...denial,
        }),
      )
    })
  }

  return {
    limiter,
    headers,
    plan(...args) {
      try {
        if (!skip) return planFor(args)
        const skipped = skip(...args)
        return isThenable(skipped)
          ? Promise.resolve(skipped).then((yes) => (yes ? SKIP : planFor(args)))
          : skipped
            ? SKIP
            : planFor(args)
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}

/** The options that belong to the controller, without the middleware's and the adapter's. */
function limiterOptions(raw: Record<string, unknown>): AdaptiveLimiterOptions {
  const own: Record<string, unknown> = {}
  for (const name of ADAPTIVE_LIMITER_OPTIONS) if (raw[name] !== undefined) own[name] = raw[name]
  return own as AdaptiveLimiterOptions
}
