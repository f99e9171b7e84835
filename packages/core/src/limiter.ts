import type { Outcome } from './algorithms/index.js'
import { type Decision, type DecisionSource, toDecision } from './decision.js'
import { toMilliseconds } from './duration.js'
import { ConfigError, StoreTimeoutError } from './errors.js'
import { MemoryStore } from './memory-store.js'
import {
  capacityOf,
  type Policy,
  type PolicyInput,
  type PolicySet,
  parsePolicies,
  supportsShaping,
  withMaxDelay,
} from './policy.js'
import { type Awaitable, isThenable, type Store } from './store.js'

export interface LimiterOptions {
  /** One policy or several, all enforced together: `['100/min', '2/s']`. */
  limits: PolicyInput | readonly PolicyInput[]
  /** Default: a new `MemoryStore`. */
  store?: Store
  /**
   * When the store throws, rejects or times out: `'allow'` (default; keep serving), `'deny'`,
   * or another store to decide instead (e.g. a MemoryStore behind Redis).
   */
  onStoreError?: 'allow' | 'deny' | Store
  /** Milliseconds to wait for an asynchronous store. Default 1000. */
  timeout?: number | string
  /** Shaping budget for every gcra and token-bucket policy that does not set its own. */
  maxDelay?: number | string
}

export interface ConsumeOptions {
  /** Units this request takes. Default 1. */
  cost?: number
}

export interface RefundOptions {
  /** Units to give back: what the refunded consume took. Default 1. */
  cost?: number
}

export interface Limiter {
  readonly policies: readonly Policy[]
  /** Decides and, if admitted, takes `cost` from every policy. Never rejects for "limited". */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
  /** What `consume` with cost 1 would decide, consuming nothing. */
  peek(key: string): Promise<Decision>
  reset(key: string): Promise<void>
  /**
   * Gives back `cost` units that an admitted `consume` took (a request that should not have
   * counted), by each algorithm's refund rule. Validates as `consume` does. Store failures are
   * not turned into decisions: the promise rejects (the `timeout` applies). Rejects with a
   * `ConfigError` when the store cannot refund (see `canRefund`).
   */
  refund(key: string, options?: RefundOptions): Promise<void>
  /** Whether the store implements refunds (MemoryStore and RedisStore do; the sketch stores do not). */
  readonly canRefund: boolean
}

/** The cost that stands for a peek inside the limiter (a consume's cost is at least 1). */
const PEEK = 0

/** How long a request denied by `onStoreError: 'deny'` is told to wait. */
const DENY_ON_ERROR_RETRY_MS = 1000

export function createLimiter(options: LimiterOptions): Limiter {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError('options', options, 'must be an object such as { limits: ["100/min"] }')
  }
  const set = withLimiterMaxDelay(parsePolicies(options.limits), options.maxDelay)
  const store = options.store ?? new MemoryStore()
  assertStore('store', store, 'must be a store with consume, peek and reset methods')
  const onStoreError = options.onStoreError ?? 'allow'
  if (onStoreError !== 'allow' && onStoreError !== 'deny') {
    assertStore('onStoreError', onStoreError, "must be 'allow', 'deny' or a fallback store")
  }
  const timeout = toMilliseconds('timeout', options.timeout ?? 1000)
  const maxCost = Math.min(...set.policies.map(capacityOf))
  const { policies } = set

  /** Asks a store for a decision: a consume of `cost`, or a peek when cost is PEEK. */
  const ask = (target: Store, key: string, cost: number): Awaitable<readonly Outcome[]> =>
    cost === PEEK ? target.peek(key, set) : target.consume(key, set, cost)

  const onFailure = async (key: string, cost: number, error: unknown): Promise<Decision> => {
    if (typeof onStoreError === 'object') {
      try {
        return toDecision(key, policies, await settle(ask(onStoreError, key, cost), timeout), 'fallback', error)
      } catch (fallbackError) {
        return failed(
          key,
          policies,
          false,
          'error',
          new AggregateError([error, fallbackError], 'the store and the fallback store both failed'),
        )
      }
    }
    return failed(key, policies, onStoreError === 'allow', 'error', error)
  }

  /** A synchronous store (memory) is answered at once: no timer, no promise. */
  const run = (key: string, cost: number): Awaitable<Decision> => {
    let answer: Awaitable<readonly Outcome[]>
    try {
      answer = ask(store, key, cost)
    } catch (error) {
      return onFailure(key, cost, error)
    }
    if (!isThenable(answer)) return toDecision(key, policies, answer, 'store')
    return (settle(answer, timeout) as Promise<readonly Outcome[]>).then(
      (outcomes) => toDecision(key, policies, outcomes, 'store'),
      (error: unknown) => onFailure(key, cost, error),
    )
  }

  /** A ConfigError when `cost` is not a cost these limits could ever admit. */
  const costError = (cost: unknown): ConfigError | undefined =>
    typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > maxCost
      ? new ConfigError(
          'cost',
          cost,
          `must be a whole number from 1 to ${maxCost} (the most these limits can ever admit at once)`,
        )
      : undefined

  /** `consume`, answered synchronously when the store is; throws what `consume` rejects with. */
  const consumeNow = (key: string, consumeOptions?: ConsumeOptions): Awaitable<Decision> => {
    // Only a missing cost means 1: a null from a lookup that found nothing is a mistake.
    const cost: unknown = consumeOptions?.cost === undefined ? 1 : consumeOptions.cost
    if (typeof key !== 'string') throw keyError(key)
    const invalid = costError(cost)
    if (invalid !== undefined) throw invalid
    return run(key, cost as number)
  }

  const limiter: Limiter = {
    policies,
    canRefund: typeof store.refund === 'function',
    consume(key, consumeOptions) {
      try {
        return Promise.resolve(consumeNow(key, consumeOptions))
      } catch (error) {
        return Promise.reject(error)
      }
    },
    peek(key) {
      if (typeof key !== 'string') return Promise.reject(keyError(key))
      return Promise.resolve(run(key, PEEK))
    },
    async reset(key) {
      if (typeof key !== 'string') throw keyError(key)
      await settle(store.reset(key, set), timeout)
    },
    async refund(key, refundOptions) {
      const cost: unknown = refundOptions?.cost === undefined ? 1 : refundOptions.cost
      if (typeof key !== 'string') throw keyError(key)
      const invalid = costError(cost)
      if (invalid !== undefined) throw invalid
      if (store.refund === undefined) {
        throw new ConfigError(
          'store',
          store,
          'cannot refund: use a MemoryStore or RedisStore, or a store with refund()',
        )
      }
      await settle(store.refund(key, set, cost as number), timeout)
    },
  }
  immediateConsumers.set(limiter, consumeNow)
  return limiter
}

/** Each limiter's synchronous-when-possible consume (see `consumeNowOf`). */
const immediateConsumers = new WeakMap<Limiter, ImmediateConsume>()

type ImmediateConsume = (key: string, options?: ConsumeOptions) => Awaitable<Decision>

/**
 * `limiter.consume`, but a decision the store made synchronously (memory) comes back as a value,
 * not a promise, and bad input throws instead of rejecting. The HTTP handlers use it so that a
 * request on a memory store takes no promise hop. Limiters not made by `createLimiter` fall back
 * to their own `consume`.
 */
export function consumeNowOf(limiter: Limiter): ImmediateConsume {
  return immediateConsumers.get(limiter) ?? ((key, options) => limiter.consume(key, options))
}

function withLimiterMaxDelay(set: PolicySet, maxDelay: unknown): PolicySet {
  if (maxDelay === undefined) return set
  const ms = toMilliseconds('maxDelay', maxDelay, { allowZero: true })
  if (!set.policies.some((p) => supportsShaping(p.algorithm))) {
    throw new ConfigError(
      'maxDelay',
      maxDelay,
      'needs a gcra or token-bucket policy in limits; other algorithms cannot delay',
    )
  }
  const policies = set.policies.map((p) => (supportsShaping(p.algorithm) && p.maxDelay === 0 ? withMaxDelay(p, ms) : p))
  return Object.freeze({ id: policies.map((p) => p.id).join('|'), policies: Object.freeze(policies) })
}

/** The value itself when the store answered synchronously; otherwise the answer or a timeout. */
function settle<T>(answer: Awaitable<T>, timeout: number): Awaitable<T> {
  if (!isThenable(answer)) return answer
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreTimeoutError(timeout)), timeout)
    answer.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

function failed(
  key: string,
  policies: readonly Policy[],
  allowed: boolean,
  source: DecisionSource,
  error: unknown,
): Decision {
  const outcomes: Outcome[] = policies.map((p) =>
    allowed
      ? { allowed, remaining: p.limit, resetAfter: 0, retryAfter: 0, delay: 0 }
      : { allowed, remaining: 0, resetAfter: DENY_ON_ERROR_RETRY_MS, retryAfter: DENY_ON_ERROR_RETRY_MS, delay: 0 },
  )
  return toDecision(key, policies, outcomes, source, error)
}

function keyError(key: unknown): ConfigError {
  return new ConfigError('key', key, 'must be a string')
}

function assertStore(field: string, store: unknown, expectation: string): asserts store is Store {
  const candidate = store as Partial<Store> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.consume !== 'function' ||
    typeof candidate.peek !== 'function' ||
    typeof candidate.reset !== 'function'
  ) {
    throw new ConfigError(field, store, expectation)
  }
}
