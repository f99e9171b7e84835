import { metrics as otel } from '@opentelemetry/api'
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import { ConfigError, createAdaptiveLimiter, createLimiter, MemoryStore, type Slot } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { metrics } from './index.js'

function setup() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const provider = new MeterProvider({ readers: [reader] })
  const observe = metrics({ meter: provider.getMeter('sluice-test') })
  /** Every data point of one metric, after a flush through the exporter. */
  const points = async (name: string): Promise<DataPoint<unknown>[]> => {
    await reader.forceFlush()
    const batches = exporter.getMetrics()
    const last = batches[batches.length - 1]
    const metric = last?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
    return (metric?.dataPoints ?? []) as DataPoint<unknown>[]
  }
  return { observe, points, close: () => provider.shutdown() }
}

type Setup = ReturnType<typeof setup>

describe('metrics({ meter })', () => {
  let s: Setup
  let warn: { mockRestore(): void }
  beforeEach(() => {
    s = setup()
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(async () => {
    warn.mockRestore()
    await s.close()
  })

  it('counts decisions by allowed, source and binding policy, and records their duration in seconds', async () => {
    const limiter = createLimiter({ limits: ['100/min', '2/s'], store: new MemoryStore(), observe: s.observe })
    for (let i = 0; i < 3; i++) await limiter.consume('a')
    const counts = (await s.points('sluice.decisions')).map((p) => [p.attributes, p.value])
    expect(counts).toEqual(
      expect.arrayContaining([
        [{ allowed: true, source: 'store', policy: '2-per-1s' }, 2],
        [{ allowed: false, source: 'store', policy: '2-per-1s' }, 1],
      ]),
    )
    expect(counts).toHaveLength(2)
    const durations = await s.points('sluice.store.duration')
    expect(durations.map((p) => [p.attributes, (p.value as Histogram).count])).toEqual([[{ source: 'store' }, 3]])
    expect(durations.every((p) => ((p.value as Histogram).sum ?? 0) < 1)).toBe(true)
  })

  it('counts store errors by error name, and the breaker opening and closing', async () => {
    const clock = { now: 0 }
    let up = false
    const memory = new MemoryStore()
    const store: Store = {
      consume: (key, set, cost) =>
        up ? Promise.resolve(memory.consume(key, set, cost)) : Promise.reject(new TypeError('down')),
      peek: (key, set) => Promise.resolve(memory.peek(key, set)),
      reset: async () => {},
    }
    const limiter = createLimiter({
      limits: '10/s',
      store,
      breaker: { failures: 2, cooldown: 1000, now: () => clock.now },
      observe: s.observe,
    })
    for (let i = 0; i < 4; i++) await limiter.consume('a')
    expect((await s.points('sluice.store.errors')).map((p) => [p.attributes, p.value])).toEqual([
      [{ error: 'TypeError' }, 2],
    ])
    expect((await s.points('sluice.breaker.open')).map((p) => p.value)).toEqual([1])
    expect(
      (await s.points('sluice.decisions')).map((p) => [p.attributes.source, p.attributes.allowed, p.value]),
    ).toEqual([['error', true, 4]])
    up = true
    clock.now = 1000
    await limiter.consume('a')
    expect((await s.points('sluice.breaker.open')).map((p) => p.value)).toEqual([0])
    expect((await s.points('sluice.breaker.transitions')).map((p) => [p.attributes, p.value])).toEqual([
      [{ state: 'open' }, 1],
      [{ state: 'closed' }, 1],
    ])
  })

  it('records syncs: duration, keys, bytes, failures', async () => {
    s.observe({ type: 'sync', store: 'synced', durationMs: 12, keys: 40, bytes: 2048 })
    s.observe({ type: 'sync', store: 'synced', durationMs: 8, keys: 10 })
    s.observe({ type: 'sync', store: 'active-clients', durationMs: 1000, keys: 0, error: new Error('timeout') })
    expect((await s.points('sluice.sync.keys')).map((p) => [p.attributes, p.value])).toEqual([
      [{ store: 'synced' }, 50],
    ])
    expect((await s.points('sluice.sync.bytes')).map((p) => p.value)).toEqual([2048])
    expect((await s.points('sluice.sync.errors')).map((p) => [p.attributes, p.value])).toEqual([
      [{ store: 'active-clients' }, 1],
    ])
    const durations = await s.points('sluice.sync.duration')
    expect(durations.map((p) => [p.attributes, (p.value as Histogram).count, (p.value as Histogram).sum])).toEqual([
      [{ store: 'synced', outcome: 'ok' }, 2, 0.02],
      [{ store: 'active-clients', outcome: 'error' }, 1, 1],
    ])
  })

  it('counts concurrency decisions under the limit name', async () => {
    s.observe({ type: 'concurrency', key: 'k', name: 'uploads', limit: 1, allowed: false, inflight: 1 })
    expect((await s.points('sluice.decisions')).map((p) => [p.attributes, p.value])).toEqual([
      [{ allowed: false, source: 'store', policy: 'uploads' }, 1],
    ])
  })

  it('works with the global API meter, and rejects anything that is not a meter', () => {
    expect(typeof metrics({ meter: otel.getMeter('noop') })).toBe('function')
    expect(() => metrics({ meter: {} as never })).toThrow(ConfigError)
    expect(() => metrics(undefined as never)).toThrow(ConfigError)
  })
})

describe('metrics of adaptive concurrency', () => {
  it('records the limit, work in flight and queued by class, requests by outcome and reason, and queue waits', async () => {
    const s = setup()
    const limiter = createAdaptiveLimiter({
      name: 'api',
      min: 2,
      max: 2,
      initial: 2,
      probe: false,
      classes: ['critical', 'default'],
      queue: { size: 1, maxWait: '1s' },
      observe: s.observe,
    })
    const first = limiter.acquire('critical') as Slot
    limiter.acquire('default')
    const waiting = limiter.acquire('default')
    limiter.acquire('default')
    const value = async (name: string) =>
      (await s.points(name))
        .map((p) => [p.attributes, p.value])
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
    expect(await value('sluice.overload.limit')).toEqual([[{ limiter: 'api' }, 2]])
    expect(await value('sluice.overload.inflight')).toEqual([
      [{ limiter: 'api', class: 'critical' }, 1],
      [{ limiter: 'api', class: 'default' }, 1],
    ])
    expect(await value('sluice.overload.queued')).toEqual([
      [{ limiter: 'api', class: 'critical' }, 0],
      [{ limiter: 'api', class: 'default' }, 1],
    ])
    first.release()
    await waiting
    expect(await value('sluice.overload.inflight')).toEqual([
      [{ limiter: 'api', class: 'critical' }, 0],
      [{ limiter: 'api', class: 'default' }, 2],
    ])
    expect(await value('sluice.overload.requests')).toEqual([
      [{ limiter: 'api', class: 'critical', outcome: 'admitted' }, 1],
      [{ limiter: 'api', class: 'default', outcome: 'admitted' }, 2],
      [{ limiter: 'api', class: 'default', outcome: 'queued' }, 1],
      [{ limiter: 'api', class: 'default', outcome: 'refused', reason: 'queue-full' }, 1],
    ])
    const waits = await s.points('sluice.overload.wait')
    expect(waits.map((p) => (p.value as Histogram).count)).toEqual([3])
    await s.close()
  })
})
