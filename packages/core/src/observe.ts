import type { Decision } from './decision.js'
import { ConfigError, describeError } from './errors.js'
import { Warnings } from './validations.js'

/** A `consume` decided: by the store, the fallback store or `onStoreError` (see `decision.source`). */
export interface DecisionEvent {
  readonly type: 'decision'
  readonly key: string
  readonly decision: Decision
  /** Units the request asked for. */
  readonly cost: number
  /** Milliseconds from asking the store to the decision (fallback and timeout included). */
  readonly storeMs: number
}

/** The store threw, rejected or timed out (`StoreTimeoutError`) on a consume or peek. */
export interface StoreErrorEvent {
  readonly type: 'store-error'
  readonly key: string
  readonly error: unknown
}

/** Consecutive store failures opened the circuit breaker: decisions skip the store for `cooldownMs`. */
export interface BreakerOpenEvent {
  readonly type: 'breaker-open'
  readonly failures: number
  readonly cooldownMs: number
  /** The failure that opened it. */
  readonly error: unknown
}

/** A probe found the store answering again: the breaker closed after `openMs`. */
export interface BreakerCloseEvent {
  readonly type: 'breaker-close'
  readonly openMs: number
}

/**
 * A background synchronisation of a store that keeps counts locally (SyncedStore,
 * RedisActiveClientsSync) finished, or failed (`error`).
 */
export interface SyncEvent {
  readonly type: 'sync'
  readonly store: 'synced' | 'active-clients'
  readonly durationMs: number
  readonly keys: number
  readonly bytes?: number
  readonly error?: unknown
}

/** `concurrencyLimit()` admitted or refused a request. */
export interface ConcurrencyEvent {
  readonly type: 'concurrency'
  readonly key: string
  /** The policy name (`name` option). */
  readonly name: string
  readonly limit: number
  readonly allowed: boolean
  /** Requests in flight for the key, this one included when admitted. */
  readonly inflight: number
}

/** Every event `observe` is called with: decisions, store errors, the breaker, concurrency and syncs. */
export type ObserveEvent =
  | DecisionEvent
  | StoreErrorEvent
  | BreakerOpenEvent
  | BreakerCloseEvent
  | SyncEvent
  | ConcurrencyEvent

/** The `observe` option: called with each event, synchronously; what it returns is ignored. */
export type Observe = (event: ObserveEvent) => unknown

/**
 * `observe` made safe to call anywhere: an exception it throws (or a promise it returns that
 * rejects) never reaches the caller, so it cannot change a decision; the first one is reported
 * as SLUICE_OBSERVE_THREW of `warnings`, the rest are dropped. Undefined in, undefined out, so that callers skip all
 * event work with one check.
 */
export function containObserve(
  observe: unknown,
  warnings: Warnings = new Warnings(),
): ((event: ObserveEvent) => void) | undefined {
  if (observe === undefined) return undefined
  if (typeof observe !== 'function') {
    throw new ConfigError('observe', observe, 'must be a function called with each event')
  }
  const report = (error: unknown) => warnings.observeThrew(describeError(error))
  return (event) => {
    try {
      const result: unknown = (observe as Observe)(event)
      if (
        result !== null &&
        typeof result === 'object' &&
        typeof (result as PromiseLike<unknown>).then === 'function'
      ) {
        ;(result as PromiseLike<unknown>).then(undefined, report)
      }
    } catch (error) {
      report(error)
    }
  }
}
