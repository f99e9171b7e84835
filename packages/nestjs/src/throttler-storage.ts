import { type AlgorithmName, ConfigError, createLimiter, type Limiter } from '@sluice/core'
import type { Store } from '@sluice/core/store'

/** What `@nestjs/throttler`'s guard reads back from its storage (its `ThrottlerStorageRecord`). */
export interface ThrottlerStorageRecord {
  totalHits: number
  /** Seconds until the window's count is gone. */
  timeToExpire: number
  isBlocked: boolean
  /** Seconds until a blocked client may try again: the guard's `Retry-After`. */
  timeToBlockExpire: number
}

/** `SluiceThrottlerStorage` options. */
export interface SluiceThrottlerStorageOptions {
  /** How each throttler counts. Default `'fixed-window'`, as `@nestjs/throttler` does; `'sliding-window'` smooths the edges. */
  algorithm?: Extract<AlgorithmName, 'fixed-window' | 'sliding-window' | 'sliding-log'>
  /** Keeps these counts apart from other limiters on the same store. Default `'throttler'`. */
  namespace?: string
}

/**
 * A `ThrottlerStorage` for `@nestjs/throttler` backed by any sluice store: an app keeps its
 * `ThrottlerModule`, `@Throttle()` and `@SkipThrottle()`, and gains one atomic decision per
 * request (on a `RedisStore`, one script: a flood never gets past the limit) by one line:
 * `ThrottlerModule.forRoot({ throttlers, storage: new SluiceThrottlerStorage(new RedisStore({ client })) })`.
 * Each request is counted only while it is admitted: a refused request adds nothing.
 */
export class SluiceThrottlerStorage {
  readonly #store: Store
  readonly #algorithm: NonNullable<SluiceThrottlerStorageOptions['algorithm']>
  readonly #namespace: string
  /** One limiter per throttler shape (ttl, limit, block), made on first use. */
  readonly #limiters = new Map<string, Limiter>()

  constructor(store: Store, options: SluiceThrottlerStorageOptions = {}) {
    if (store === null || typeof store !== 'object' || typeof (store as Store).consume !== 'function') {
      throw new ConfigError(
        'store',
        store,
        'must be a sluice store such as new RedisStore({ client }) or new MemoryStore()',
      )
    }
    const { algorithm = 'fixed-window', namespace = 'throttler', ...rest } = options
    const unknown = Object.keys(rest)[0]
    if (unknown !== undefined) {
      throw new ConfigError(
        unknown,
        (rest as Record<string, unknown>)[unknown],
        'is not an option of SluiceThrottlerStorage (algorithm, namespace)',
      )
    }
    if (!['fixed-window', 'sliding-window', 'sliding-log'].includes(algorithm)) {
      throw new ConfigError('algorithm', algorithm, "must be 'fixed-window', 'sliding-window' or 'sliding-log'")
    }
    this.#store = store
    this.#algorithm = algorithm
    this.#namespace = namespace
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const decision = await this.#limiterFor(ttl, limit, blockDuration, throttlerName).consume(key)
    if (decision.allowed) {
      return {
        totalHits: limit - decision.remaining,
        timeToExpire: Math.ceil(decision.resetAfter / 1000),
        isBlocked: false,
        timeToBlockExpire: 0,
      }
    }
    const wait = Math.ceil(decision.retryAfter / 1000)
    return {
      totalHits: limit + 1,
      timeToExpire: Math.max(wait, Math.ceil(decision.resetAfter / 1000)),
      isBlocked: true,
      timeToBlockExpire: wait,
    }
  }

  #limiterFor(ttl: number, limit: number, blockDuration: number, throttlerName: string): Limiter {
    const id = `${ttl}:${limit}:${blockDuration}`
    let limiter = this.#limiters.get(id)
    if (limiter === undefined) {
      // A denial lasts until the window frees a unit, at most ttl: a block only where it is longer.
      const blockFor = blockDuration > ttl ? blockDuration : undefined
      const policy = { limit, window: ttl, algorithm: this.#algorithm, ...(blockFor !== undefined && { blockFor }) }
      try {
        limiter = createLimiter({
          limits: policy,
          store: this.#store,
          namespace: this.#namespace,
          validate: { SLUICE_SHARED_POLICY: false },
        })
      } catch (error) {
        if (error instanceof ConfigError) error.message = `throttler ${JSON.stringify(throttlerName)}: ${error.message}`
        throw error
      }
      this.#limiters.set(id, limiter)
    }
    return limiter
  }
}
