import type { Decision } from '../limiter/decision.js'
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

/**
 * Why adaptive concurrency refused work: over the limit with no queue (`limit`), the queue full
 * of work as critical (`queue-full`), waited `maxWait` (`timeout`), pushed out of the queue by
 * more critical work (`evicted`), or its signal aborted (`aborted`).
 */
export type OverloadRefusal = 'limit' | 'queue-full' | 'timeout' | 'evicted' | 'aborted'

/**
 * An adaptive concurrency limiter admitted, queued or refused work of one class, or admitted
 * work was `released` (finished: its slot freed), so that gauges of work in flight stay exact.
 */
export interface OverloadEvent {
  readonly type: 'overload'
  /** The limiter's `name`. */
  readonly name: string
  readonly class: string
  readonly outcome: 'admitted' | 'queued' | 'refused' | 'released'
  /** Set when refused. */
  readonly reason?: OverloadRefusal
  /** Milliseconds the work waited in the queue. */
  readonly waitedMs: number
  readonly limit: number
  /** Work in flight and waiting, every class. */
  readonly inflight: number
  readonly queued: number
  /** Work in flight and waiting, this class. */
  readonly classInflight: number
  readonly classQueued: number
}

/**
 * An adaptive concurrency limiter updated its limit: after a sample window (`latency`, or
 * `event-loop-delay` when that signal cut it), or at the start and end of a probe of the no-load
 * latency (`latencyMs` is then the probe's measure).
 */
export interface OverloadLimitEvent {
  readonly type: 'overload-limit'
  readonly name: string
  readonly algorithm: string
  readonly limit: number
  readonly previous: number
  readonly cause: 'latency' | 'event-loop-delay' | 'probe-start' | 'probe-end'
  /** The window's mean latency, ms. */
  readonly latencyMs: number
  readonly inflight: number
}

/** Every event `observe` is called with: decisions, store errors, the breaker, concurrency, syncs and overload. */
export type ObserveEvent =
  | DecisionEvent
  | StoreErrorEvent
  | BreakerOpenEvent
  | BreakerCloseEvent
  | SyncEvent
  | ConcurrencyEvent
  | OverloadEvent
  | OverloadLimitEvent

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
