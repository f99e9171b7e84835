import { ConfigError } from '../diagnostics/errors.js'
import { assertKnownOptions } from '../diagnostics/known-options.js'
import { toMilliseconds } from '../policies/duration.js'

/** Options of `createClientThrottle`. */
export interface ClientThrottleOptions {
  /**
   * K of the SRE book: how many requests per accepted one the backend may see before the client
   * starts rejecting locally. 2 (the default) spends up to twice the accepted traffic on the
   * backend; lower is more aggressive. More than 1.
   */
  k?: number
  /** How far back requests and accepts are counted (a duration). Default `'2m'`, the book's. */
  window?: number | string
  /**
   * Whether a result of `call` is a refusal by the backend. Default: a response-like value whose
   * `status` is 429 or 503. A thrown error is a refusal unless this says otherwise of it.
   */
  rejected?: (outcome: { result?: unknown; error?: unknown }) => boolean
  /** The clock, ms. Default `Date.now`. */
  now?: () => number
  /** A number in [0, 1) for the local rejections. Default `Math.random`. */
  random?: () => number
}

/** Thrown by `call` for a request the client rejected without sending it. */
export class ThrottledError extends Error {
  override readonly name = 'ThrottledError'
  constructor(readonly probability: number) {
    super(`rejected locally: the backend has been refusing (rejecting ${Math.round(probability * 100)} % of requests)`)
  }
}

/**
 * The client side of overload (Google SRE, "Handling Overload"): once the backend has been
 * refusing, reject requests locally with probability max(0, (requests − K·accepts) / (requests + 1)),
 * so a refusing backend is not also spending its capacity on refusals (and retries of them).
 */
export interface ClientThrottle {
  /** The chance that the next request is rejected locally. */
  readonly probability: number
  /** Requests (sent or rejected locally) and accepts within the window. */
  readonly requests: number
  readonly accepts: number
  /** Counts a request and says whether to send it (false: reject it locally). */
  attempt(): boolean
  /** Counts an accept: the backend answered the request (with anything but a refusal). */
  accepted(): void
  /** `attempt`, then `send` and `accepted` unless it was a refusal; throws `ThrottledError` when rejected locally. */
  call<T>(send: () => Promise<T> | T): Promise<T>
}

const BUCKETS = 20

const defaultRejected = ({ result, error }: { result?: unknown; error?: unknown }): boolean => {
  if (error !== undefined) return true
  const status = (result as { status?: unknown } | null | undefined)?.status
  return status === 429 || status === 503
}

/** Makes a client-side adaptive throttle for calls to one backend. */
export function createClientThrottle(options: ClientThrottleOptions = {}): ClientThrottle {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError('options', options, 'must be an object such as { k: 2 }')
  }
  assertKnownOptions(
    options as Record<string, unknown>,
    ['k', 'window', 'rejected', 'now', 'random'],
    'createClientThrottle()',
  )
  const k = options.k ?? 2
  if (typeof k !== 'number' || !Number.isFinite(k) || k <= 1) {
    throw new ConfigError('k', k, 'must be a number above 1 (2 sends up to twice the accepted requests)')
  }
  const windowMs = toMilliseconds('window', options.window ?? '2m')
  for (const name of ['rejected', 'now', 'random'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigError(name, options[name], 'must be a function')
    }
  }
  const now = options.now ?? Date.now
  const random = options.random ?? Math.random
  const rejected = options.rejected ?? defaultRejected
  const bucketMs = windowMs / BUCKETS
  // Counts per bucket of time, a ring: index = bucket number mod BUCKETS.
  const starts = new Array<number>(BUCKETS).fill(Number.NEGATIVE_INFINITY)
  const requestCounts = new Array<number>(BUCKETS).fill(0)
  const acceptCounts = new Array<number>(BUCKETS).fill(0)

  const bucket = (): number => {
    const number = Math.floor(now() / bucketMs)
    const index = ((number % BUCKETS) + BUCKETS) % BUCKETS
    if (starts[index] !== number) {
      starts[index] = number
      requestCounts[index] = 0
      acceptCounts[index] = 0
    }
    return index
  }
  const total = (counts: number[]): number => {
    const oldest = Math.floor(now() / bucketMs) - BUCKETS + 1
    let sum = 0
    for (let i = 0; i < BUCKETS; i++) if ((starts[i] as number) >= oldest) sum += counts[i] as number
    return sum
  }
  const probability = (): number => {
    const requests = total(requestCounts)
    return Math.max(0, (requests - k * total(acceptCounts)) / (requests + 1))
  }

  const throttle: ClientThrottle = {
    get probability() {
      return probability()
    },
    get requests() {
      return total(requestCounts)
    },
    get accepts() {
      return total(acceptCounts)
    },
    attempt() {
      const chance = probability()
      const index = bucket()
      requestCounts[index] = (requestCounts[index] as number) + 1
      return random() >= chance
    },
    accepted() {
      const index = bucket()
      acceptCounts[index] = (acceptCounts[index] as number) + 1
    },
    async call(send) {
      const chance = probability()
      if (!throttle.attempt()) throw new ThrottledError(chance)
      let result: Awaited<ReturnType<typeof send>>
      try {
        result = await send()
      } catch (error) {
        if (!rejected({ error })) throttle.accepted()
        throw error
      }
      if (!rejected({ result })) throttle.accepted()
      return result
    },
  }
  return throttle
}
