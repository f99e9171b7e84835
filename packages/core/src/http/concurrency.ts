import { ConfigError } from '../errors.js'
import { InflightCounter } from '../sketch/inflight.js'
import { type Awaitable, andThen } from '../store.js'
import {
  concurrencyHeaders,
  type HeaderEntry,
  type HeaderMode,
  type HeadersOption,
  headerModeOption,
  sfString,
} from './headers.js'
import {
  type Adapter,
  assertKnownOptions,
  assertObject,
  COMMON_OPTIONS,
  type CommonOptions,
  parseCommon,
} from './options.js'
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

export interface ConcurrencyLimitOptions<A extends unknown[], R = unknown>
  extends CommonOptions<A, ConcurrencyInfo, R> {
  /** Requests in flight at once per key, in this process. */
  limit: number
  /** The policy name in headers and problem details. Default `'concurrency'`. */
  name?: string
  /** `'draft-11'` (default, quota unit `"concurrent-requests"`) or false; other modes send nothing. */
  headers?: HeadersOption
}

const CONCURRENCY_OPTIONS = ['limit', 'name', 'headers', ...COMMON_OPTIONS]

/**
 * `continue`: set `headers`, call the next handler, and call `release` once the response is
 * finished, failed or abandoned (extra calls do nothing). `deny`: as for rate limits.
 */
export type ConcurrencyPlan<R> =
  | typeof SKIP
  | { readonly kind: 'continue'; readonly headers: readonly HeaderEntry[]; readonly release: () => void }
  | (DenyPlan<R> & { readonly info: ConcurrencyInfo })

export interface ConcurrencyHandler<A extends unknown[], R> {
  /** Requests in flight per key, in this process. */
  readonly inflight: InflightCounter
  readonly headers: HeaderMode | false
  /** Like the rate limiter's: a value when every step was synchronous, never a throw. */
  plan(...args: A): Awaitable<ConcurrencyPlan<R>>
}

const NOTHING_TO_RELEASE = (): void => {}

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
  if (typeof name !== 'string' || name === '') throw new ConfigError('name', name, 'must be a non-empty string')
  sfString(name)
  const headers = headerModeOption(options.headers)
  const common = parseCommon<A, ConcurrencyInfo, R>(raw, adapter)
  const { key, skip, statusCode, dryRun } = common
  const inflight = new InflightCounter()

  const admit = (args: A, requestKey: string): Awaitable<ConcurrencyPlan<R>> => {
    const current = inflight.count(requestKey)
    if (current < limit) {
      const guard = inflight.acquire(requestKey)
      const entries = concurrencyHeaders(name, limit, limit - guard.count, headers)
      return { kind: 'continue', headers: entries, release: guard.release }
    }
    const entries = concurrencyHeaders(name, limit, 0, headers)
    if (dryRun) return { kind: 'continue', headers: entries, release: NOTHING_TO_RELEASE }
    const info: ConcurrencyInfo = { name, key: requestKey, limit, inflight: current }
    return denialResponse(common, args, info, () => concurrencyProblem(name, limit, statusCode)).then((response) => ({
      kind: 'deny',
      info,
      status: statusCode,
      headers: entries,
      response,
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
