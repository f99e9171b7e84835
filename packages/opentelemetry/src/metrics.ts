import type { Attributes, Meter } from '@opentelemetry/api'
import { ConfigError, type ObserveEvent } from '@sluice/core'

/**
 * Bucket boundaries of the duration histograms, in seconds (OpenTelemetry's unit for durations):
 * 1-2-5 steps from 0.1 ms to 5 s, so a memory store's microseconds, a Redis round trip and a
 * limiter `timeout` (200 ms, 1 s) each have buckets of their own and a p99 read from the
 * histogram lands within one bucket of the true value. Given to the SDK as advice; a View may
 * override it.
 */
export const DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5,
]

/** Options of `metrics()`: the OpenTelemetry `meter` to record on. */
export interface MetricsOptions {
  /** Where the instruments are created: `metrics.getMeter('my-app')` from `@opentelemetry/api`. */
  meter: Meter
}

/**
 * An `observe` function that records sluice's events as OpenTelemetry metrics:
 *
 * - `sluice.decisions` (counter): each decision, by `allowed`, `source` (store, fallback, error)
 *   and `policy` (the binding policy's name; a concurrency limit's name);
 * - `sluice.store.duration` (histogram, seconds, `DURATION_BUCKETS`): how long each decision
 *   took, by `source`;
 * - `sluice.store.errors` (counter): store failures and timeouts, by `error` (its name);
 * - `sluice.breaker.open` (up-down counter): circuit breakers open now, and
 *   `sluice.breaker.transitions` (counter) by `state` (open, closed);
 * - `sluice.sync.duration` (histogram, seconds), `sluice.sync.keys`, `sluice.sync.bytes` and
 *   `sluice.sync.errors` (counters): background syncs of SyncedStore and
 *   RedisActiveClientsSync, by `store`;
 * - adaptive concurrency: `sluice.overload.limit` (gauge) by `limiter` (its name);
 *   `sluice.overload.inflight` and `sluice.overload.queued` (gauges) by `limiter` and `class`;
 *   `sluice.overload.requests` (counter) by `limiter`, `class`, `outcome` (admitted, queued,
 *   refused) and `reason` (why refused); `sluice.overload.wait` (histogram, seconds) of the
 *   queue wait of admitted work.
 *
 * Pass it as `observe` to `createLimiter` or any middleware; one function may serve them all.
 */
export function metrics(options: MetricsOptions): (event: ObserveEvent) => void {
  const meter = options?.meter as Partial<Meter> | undefined
  if (meter === null || typeof meter !== 'object' || typeof meter.createCounter !== 'function') {
    throw new ConfigError('meter', meter, "must be an OpenTelemetry Meter, e.g. metrics.getMeter('my-app')")
  }
  const m = meter as Meter
  const decisions = m.createCounter('sluice.decisions', {
    description: 'Rate-limit decisions, by whether they allowed the request, who decided and the binding policy',
  })
  const advice = { explicitBucketBoundaries: [...DURATION_BUCKETS] }
  const storeDuration = m.createHistogram('sluice.store.duration', {
    description: 'Time from asking the store to the decision',
    unit: 's',
    advice,
  })
  const storeErrors = m.createCounter('sluice.store.errors', {
    description: 'Store failures and timeouts seen by the limiter',
  })
  const breakersOpen = m.createUpDownCounter('sluice.breaker.open', {
    description: 'Store circuit breakers open now (decisions skip the store)',
  })
  const breakerTransitions = m.createCounter('sluice.breaker.transitions', {
    description: 'Store circuit breakers opening and closing',
  })
  const syncDuration = m.createHistogram('sluice.sync.duration', {
    description: 'Duration of a background sync of locally kept counts',
    unit: 's',
    advice,
  })
  const syncKeys = m.createCounter('sluice.sync.keys', { description: 'Keys sent by background syncs' })
  const syncBytes = m.createCounter('sluice.sync.bytes', { description: 'Bytes sent by background syncs', unit: 'By' })
  const syncErrors = m.createCounter('sluice.sync.errors', { description: 'Background syncs that failed' })
  const overloadRequests = m.createCounter('sluice.overload.requests', {
    description: 'Work admitted, queued and refused by adaptive concurrency, by class and reason',
  })
  const overloadWait = m.createHistogram('sluice.overload.wait', {
    description: 'Time admitted work waited in the adaptive concurrency queue',
    unit: 's',
    advice,
  })
  // Gauges read the last value each event reported, per limiter and class.
  const limits = new Map<string, number>()
  const byClass = new Map<string, { limiter: string; class: string; inflight: number; queued: number }>()
  m.createObservableGauge('sluice.overload.limit', {
    description: 'The concurrency limit adaptive concurrency has learned',
  }).addCallback((result) => {
    for (const [limiter, limit] of limits) result.observe(limit, { limiter })
  })
  m.createObservableGauge('sluice.overload.inflight', {
    description: 'Work in flight under adaptive concurrency, by class',
  }).addCallback((result) => {
    for (const c of byClass.values()) result.observe(c.inflight, { limiter: c.limiter, class: c.class })
  })
  m.createObservableGauge('sluice.overload.queued', {
    description: 'Work waiting for adaptive concurrency, by class',
  }).addCallback((result) => {
    for (const c of byClass.values()) result.observe(c.queued, { limiter: c.limiter, class: c.class })
  })

  return (event) => {
    switch (event.type) {
      case 'decision': {
        const { decision } = event
        decisions.add(1, { allowed: decision.allowed, source: decision.source, policy: decision.binding.name })
        storeDuration.record(event.storeMs / 1000, { source: decision.source })
        return
      }
      case 'concurrency':
        decisions.add(1, { allowed: event.allowed, source: 'store', policy: event.name })
        return
      case 'store-error':
        storeErrors.add(1, { error: errorName(event.error) })
        return
      case 'breaker-open':
        breakersOpen.add(1)
        breakerTransitions.add(1, { state: 'open' })
        return
      case 'breaker-close':
        breakersOpen.add(-1)
        breakerTransitions.add(1, { state: 'closed' })
        return
      case 'overload': {
        if (event.outcome !== 'released') {
          const attributes: Attributes = { limiter: event.name, class: event.class, outcome: event.outcome }
          if (event.reason !== undefined) attributes.reason = event.reason
          overloadRequests.add(1, attributes)
        }
        if (event.outcome === 'admitted') overloadWait.record(event.waitedMs / 1000, { limiter: event.name })
        limits.set(event.name, event.limit)
        const id = `${event.name}\u0000${event.class}`
        const counts = byClass.get(id) ?? { limiter: event.name, class: event.class, inflight: 0, queued: 0 }
        counts.inflight = event.classInflight
        counts.queued = event.classQueued
        byClass.set(id, counts)
        return
      }
      case 'overload-limit':
        limits.set(event.name, event.limit)
        return
      case 'sync': {
        const attributes: Attributes = { store: event.store, outcome: event.error === undefined ? 'ok' : 'error' }
        syncDuration.record(event.durationMs / 1000, attributes)
        if (event.error !== undefined) {
          syncErrors.add(1, { store: event.store })
          return
        }
        syncKeys.add(event.keys, { store: event.store })
        if (event.bytes !== undefined) syncBytes.add(event.bytes, { store: event.store })
        return
      }
    }
  }
}

/** A bounded attribute value: the error's class name, never its message (which may hold keys). */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error
}
