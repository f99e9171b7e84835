// The store-duration histogram as Prometheus scrapes it: the p99 that the README's alert reads is
// within one bucket of the true p99, and the alert names series the exporter really writes.
import { readFileSync } from 'node:fs'
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { createLimiter } from '@sluice/core'
import { DURATION_BUCKETS, metrics } from '@sluice/opentelemetry'
import { afterEach, describe, expect, it } from 'vitest'

const readme = readFileSync(new URL('../../packages/opentelemetry/README.md', import.meta.url), 'utf8')

/** Store call times in ms: mostly a Redis round trip (0.2–3 ms), a slow tail to 400 ms. Seeded. */
function storeTimes(count: number): number[] {
  let seed = 42
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    return seed / 2 ** 31
  }
  return Array.from({ length: count }, () => (random() < 0.97 ? 0.2 * 15 ** random() : 20 * 20 ** random()))
}

/** Prometheus's histogram_quantile over cumulative buckets (le → count), in seconds. */
function histogramQuantile(q: number, buckets: readonly (readonly [number, number])[]): number {
  const total = buckets.at(-1)?.[1] ?? 0
  const rank = q * total
  let lower = 0
  let below = 0
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lower
      return lower + ((le - lower) * (rank - below)) / (count - below)
    }
    lower = le
    below = count
  }
  return lower
}

/** Which bucket a value falls in: 0 for ≤ the first boundary, … , boundaries.length for +Inf. */
function bucketOf(seconds: number): number {
  const index = DURATION_BUCKETS.findIndex((le) => seconds <= le)
  return index === -1 ? DURATION_BUCKETS.length : index
}

let provider: MeterProvider | undefined
afterEach(async () => {
  await provider?.shutdown()
})

describe('sluice.store.duration', () => {
  it("is scraped in seconds with sluice's buckets, and its p99 is within one bucket of the true p99", async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true })
    provider = new MeterProvider({ readers: [exporter] })
    const observe = metrics({ meter: provider.getMeter('test') })
    const limiter = createLimiter({ limits: ['100/min'] })
    const decision = await limiter.consume('k')
    const times = storeTimes(20_000)
    for (const storeMs of times) observe({ type: 'decision', key: 'k', decision, cost: 1, storeMs })

    const { resourceMetrics } = await exporter.collect()
    const text = new PrometheusSerializer().serialize(resourceMetrics)
    const buckets = [...text.matchAll(/^sluice_store_duration_bucket\{[^}]*le="([^"]+)"[^}]*\} (\d+)/gm)].map(
      (m) => [m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), Number(m[2])] as const,
    )
    expect(buckets.map(([le]) => le)).toEqual([...DURATION_BUCKETS, Number.POSITIVE_INFINITY])

    const sorted = [...times].sort((a, b) => a - b)
    const trueP99 = (sorted[Math.ceil(0.99 * sorted.length) - 1] as number) / 1000
    const estimated = histogramQuantile(0.99, buckets)
    expect(Math.abs(bucketOf(estimated) - bucketOf(trueP99))).toBeLessThanOrEqual(1)
    // With the SDK's default boundaries (0, 5, 10, 25, … 10 000 s) every sample is in le="5".
    expect(trueP99).toBeGreaterThan(0.02)
  })

  it("the README's alert reads series the exporter writes, against a boundary it has", async () => {
    const alert = /```promql\n([^`]+)```/.exec(readme)?.[1]
    expect(alert).toBeDefined()
    const exporter = new PrometheusExporter({ preventServerStart: true })
    provider = new MeterProvider({ readers: [exporter] })
    const observe = metrics({ meter: provider.getMeter('test') })
    const limiter = createLimiter({ limits: ['100/min'] })
    const decision = await limiter.consume('k')
    observe({ type: 'decision', key: 'k', decision, cost: 1, storeMs: 3 })
    const { resourceMetrics } = await exporter.collect()
    const text = new PrometheusSerializer().serialize(resourceMetrics)
    for (const series of (alert as string).match(/sluice_\w+/g) ?? []) expect(text).toContain(`${series}{`)
    const threshold = Number(/> ([\d.]+)/.exec(alert as string)?.[1])
    expect(DURATION_BUCKETS).toContain(threshold)
  })
})
