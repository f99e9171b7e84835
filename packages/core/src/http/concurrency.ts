import { ConfigError } from '../diagnostics/errors.js'
import { containObserve, type Observe } from '../diagnostics/observe.js'
import { toMilliseconds } from '../policies/duration.js'
import { headerInteger } from '../policies/policy.js'
import { InflightCounter, type InflightCounting } from '../sketch/inflight.js'
import { type Awaitable, andThen } from '../stores/contract.js'
import {
  type Adapter,
  assertKnownOptions,
  assertObject,
  COMMON_OPTIONS,
  type CommonOptions,
  parseCommon,
} from './common-options.js'
import {
  concurrencyHeaders,
  type HeaderEntry,
  type HeaderMode,
  type HeadersOption,
  headerModeOption,
  retryAfterHeader,
  sfString,
} from './headers.js'
import { concurrencyProblem } from './problem.js'
import { type DenyPlan, denialResponse, SKIP } from './response.js'

/** What `message` and `onLimited` of a concurrency limit receive about the refusal. */
export interface ConcurrencyInfo {
  readonly name: string
  readonly key: string
  readonly limit: number
  /** Requests in flight for the key when this one was refused. */
  readonly inflight: number
}

/** `concurrencyLimit()` options every adapter shares; `A` is the framework's handler arguments. */
export interface ConcurrencyLimitOptions<A extends unknown[], R = unknown>
  extends CommonOptions<A, ConcurrencyInfo, R> {
  /** Requests in flight at once per key, in this process. */
  limit: number
  /** The policy name in headers and problem details. Default `'concurrency'`. */
  name?: string
  /** `'draft-11'` (default, quota unit `"concurrent-requests"`) or false; other modes send nothing. */
  headers?: HeadersOption
  /**
   * The Retry-After of a denial: a duration (rounded up to whole seconds, at least 1), or false
   * for none. Default `'1s'`: a slot frees when any request in flight finishes, which no one can
   * predict, so this is a hint to back off briefly, not a promise.
   */
  retryAfter?: number | string | false
  /** Called with a `concurrency` event for each request admitted or refused (see `ObserveEvent`). */
  observe?: Observe
  /**
   * What counts requests in flight. Default a new `InflightCounter` (exact, one map entry per key
   * with requests in flight). A `SketchInflightCounter` holds fixed memory however many keys
   * arrive (a count may read high when keys collide, so a request may be refused early, never
   * admitted beyond `limit`); a `SharedInflightCounter` opened from one buffer in every worker
   * thread makes `limit` hold across the threads.
   */
  counter?: InflightCounting
}

const CONCURRENCY_OPTIONS = ['limit', 'name', 'headers', 'retryAfter', 'observe', 'counter', ...COMMON_OPTIONS]
const DEFAULT_CONCURRENCY_RETRY_AFTER_MS = 1000

/**
 * `continue`: set `headers`, call the next handler, and call `release` once the response is
 * finished, failed or abandoned (extra calls do nothing). `deny`: as for rate limits.
 */
export type ConcurrencyPlan<R> =
  | typeof SKIP
  | { readonly kind: 'continue'; readonly headers: readonly HeaderEntry[]; readonly release: () => void }
  | (DenyPlan<R> & { readonly info: ConcurrencyInfo })

/** What `createConcurrencyHandler` returns: the per-request planner an adapter calls. */
export interface ConcurrencyHandler<A extends unknown[], R> {
  /** Requests in flight per key: the `counter` option, or this handler's own `InflightCounter`. */
  readonly inflight: InflightCounting
  readonly headers: HeaderMode | false
  /** Like the rate limiter's: a value when every step was synchronous, never a throw. */
  plan(...args: A): Awaitable<ConcurrencyPlan<R>>
}

const NOTHING_TO_RELEASE = (): void => {}

/** Validates `concurrencyLimit()` options once and returns the per-request planner, so adapters only translate. */
export function createConcurrencyHandler<A extends unknown[], R>(
  options: ConcurrencyLimitOptions<A, R>,
  adapter: Adapter<A>,
): ConcurrencyHandler<A, R> {
  assertObject(options, '{ limit: 10 }')
  const raw = options as unknown as Record<string, unknown>
  assertKnownOptions(raw, [...CONCURRENCY_OPTIONS, ...(adapter.extraOptions ?? [])], 'concurrencyLimit()')
  const { limit, name = 'concurrency' } = options
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new ConfigError('limit', limit, 'must be a positive whole number of requests in flight')
  }
  headerInteger('limit', limit)
  if (typeof name !== 'string' || name === '') throw new ConfigError('name', name, 'must be a non-empty string')
  sfString(name)
  const headers = headerModeOption(options.headers)
  const retryAfter =
    options.retryAfter === false
      ? undefined
      : retryAfterHeader(
          options.retryAfter === undefined
            ? DEFAULT_CONCURRENCY_RETRY_AFTER_MS
            : toMilliseconds('retryAfter', options.retryAfter),
        )
  const common = parseCommon<A, ConcurrencyInfo, R>(raw, adapter)
  const { key, skip, statusCode, dryRun } = common
  const inflight = counterOption(options.counter)
  const emit = containObserve(options.observe, common.warnings)

  const admit = (args: A, requestKey: string): Awaitable<ConcurrencyPlan<R>> => {
    // Acquire, then look: with a counter other threads share, a look first could let two threads
    // both take the last slot.
    const guard = inflight.acquire(requestKey)
    if (guard.count <= limit) {
      const entries = concurrencyHeaders(name, limit, limit - guard.count, headers)
      emit?.({ type: 'concurrency', key: requestKey, name, limit, allowed: true, inflight: guard.count })
      return { kind: 'continue', headers: entries, release: guard.release }
    }
    guard.release()
    const current = guard.count - 1
    const entries = concurrencyHeaders(name, limit, 0, headers)
    emit?.({ type: 'concurrency', key: requestKey, name, limit, allowed: false, inflight: current })
    if (dryRun) return { kind: 'continue', headers: entries, release: NOTHING_TO_RELEASE }
    const info: ConcurrencyInfo = { name, key: requestKey, limit, inflight: current }
    return denialResponse(common, args, info, () => concurrencyProblem(name, limit, statusCode)).then((denial) => ({
      kind: 'deny',
      info,
      status: statusCode,
      headers: retryAfter === undefined ? entries : [...entries, retryAfter],
      ...denial,
    }))
  }

  return {
    inflight,
    headers,
    plan(...args) {
      try {
        return andThen(skip ? skip(...args) : false, (skipped) =>
          skipped ? SKIP : andThen(key(...args), (requestKey) => admit(args, requestKey)),
        )
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}

function counterOption(counter: unknown): InflightCounting {
  if (counter === undefined) return new InflightCounter()
  const given = counter as Partial<InflightCounting> | null
  if (
    typeof given !== 'object' ||
    given === null ||
    typeof given.acquire !== 'function' ||
    typeof given.count !== 'function'
  ) {
    throw new ConfigError(
      'counter',
      counter,
      'must count requests in flight: an InflightCounter, SketchInflightCounter or SharedInflightCounter',
    )
  }
  return given as InflightCounting
}
