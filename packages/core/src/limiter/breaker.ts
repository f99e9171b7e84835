import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'

/** `createLimiter`'s `breaker` option: when to stop asking a failing store, and for how long. */
export interface BreakerOptions {
  /** Consecutive store failures or timeouts that open the breaker. Default 5. */
  failures?: number
  /**
   * How long decisions skip the store before one probe asks it again. Default `'1s'`: decisions
   * come back to the store within about a second of it answering again, for one probe a second
   * per process while it does not (a probe into a stalled store waits the limiter's timeout).
   */
  cooldown?: number | string
  /** The clock, in milliseconds (default `Date.now`): tests pass their own. */
  now?: () => number
}

export const DEFAULT_BREAKER = Object.freeze({ failures: 5, cooldown: 1000 })

/** The error of a decision made while the breaker is open: the store was not asked. */
export class BreakerOpenError extends Error {
  override readonly name = 'BreakerOpenError'
  constructor(
    /** The consecutive failures that opened the breaker. */
    readonly failures: number,
    /** Milliseconds until the next probe may ask the store. */
    readonly retryIn: number,
    /** The store's error that opened the breaker. */
    override readonly cause: unknown,
  ) {
    super(
      `the store circuit breaker is open after ${failures} consecutive store failures; ` +
        `the store is not asked for ${retryIn} ms more`,
    )
  }
}

/**
 * A circuit breaker over a store's asynchronous answers. Closed: every decision asks the store,
 * and `failures` failures in a row open it. Open: no decision asks the store (the caller goes
 * straight to `onStoreError`) until `cooldown` has passed; then exactly one decision is let
 * through as a probe, and its success closes the breaker while its failure opens it again.
 * Answers that come back while open, from requests sent before it opened, change nothing.
 */
export class Breaker {
  /** False while closed: the one field the hot path reads. */
  open = false
  #failures = 0
  /** When the current cooldown started (a failed probe starts another). */
  #openedAt = 0
  /** When the breaker last went from closed to open. */
  #firstOpenedAt = 0
  #probing = false
  #cause: unknown
  readonly #threshold: number
  readonly #cooldown: number
  readonly #now: () => number

  constructor(threshold: number, cooldown: number, now: () => number) {
    this.#threshold = threshold
    this.#cooldown = cooldown
    this.#now = now
  }

  get failures(): number {
    return this.#failures
  }

  get cooldown(): number {
    return this.#cooldown
  }

  /**
   * While open: true for the one probe after the cooldown (the caller then asks the store and
   * reports how it went), false for every other decision, which must not ask the store.
   */
  tryProbe(): boolean {
    if (this.#probing || this.#now() - this.#openedAt < this.#cooldown) return false
    this.#probing = true
    return true
  }

  /** The error a decision that skipped the store carries. */
  openError(): BreakerOpenError {
    const retryIn = Math.max(0, this.#openedAt + this.#cooldown - this.#now())
    return new BreakerOpenError(this.#failures, retryIn, this.#cause)
  }

  /**
   * The store answered (`probe`: this was the probe's answer). Returns how many milliseconds the
   * breaker had been open when this closed it, else undefined.
   */
  succeeded(probe: boolean): number | undefined {
    if (this.open) {
      if (!probe) return undefined
      this.open = false
      this.#probing = false
      this.#failures = 0
      return this.#now() - this.#firstOpenedAt
    }
    this.#failures = 0
    return undefined
  }

  /** The store failed or timed out. Returns true when this opened the breaker. */
  failed(probe: boolean, error: unknown): boolean {
    if (this.open) {
      if (probe) {
        // The probe failed: another full cooldown before the next one.
        this.#probing = false
        this.#openedAt = this.#now()
        this.#cause = error
      }
      return false
    }
    this.#failures++
    if (this.#failures < this.#threshold) return false
    this.open = true
    this.#openedAt = this.#now()
    this.#firstOpenedAt = this.#openedAt
    this.#cause = error
    return true
  }
}

/** The breaker `createLimiter` builds from its option, or undefined for `false`. */
export function breakerOf(option: unknown): Breaker | undefined {
  if (option === false) return undefined
  if (option === undefined) return new Breaker(DEFAULT_BREAKER.failures, DEFAULT_BREAKER.cooldown, Date.now)
  if (option === null || typeof option !== 'object' || Array.isArray(option)) {
    throw new ConfigError('breaker', option, "must be false or an object such as { failures: 5, cooldown: '5s' }")
  }
  const {
    failures = DEFAULT_BREAKER.failures,
    cooldown = DEFAULT_BREAKER.cooldown,
    now = Date.now,
  } = option as BreakerOptions
  for (const name of Object.keys(option)) {
    if (name !== 'failures' && name !== 'cooldown' && name !== 'now') {
      throw new ConfigError(
        `breaker.${name}`,
        (option as Record<string, unknown>)[name],
        'is not a breaker option (failures, cooldown, now)',
      )
    }
  }
  if (typeof failures !== 'number' || !Number.isSafeInteger(failures) || failures < 1) {
    throw new ConfigError('breaker.failures', failures, 'must be a whole number of consecutive failures, at least 1')
  }
  if (typeof now !== 'function')
    throw new ConfigError('breaker.now', now, 'must be a function returning epoch milliseconds')
  return new Breaker(failures, toMilliseconds('breaker.cooldown', cooldown), now)
}
