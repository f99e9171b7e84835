/**
 * Overload protection, side by side: a simulated service of fixed capacity (N jobs at once at
 * base latency L; beyond N they share it, so latency rises with the load and throughput stays at
 * N/L) offered ×1, ×2, ×3 and ×5 its capacity by clients that give up after a timeout, behind no
 * limiter, a fixed concurrency limit (concurrencyLimit's InflightCounter) set right, at half and
 * at double, and adaptiveConcurrency's controller with each algorithm and with priorities. Then
 * the capacity halves mid-run and is restored: how fast each algorithm's limit follows, and
 * bench/overload.svg, the limit and the latency over time.
 *
 * Everything runs in simulated time (a manual clock; the service is timers, not CPU), so the
 * numbers do not depend on how loaded this machine is, and a run is exact for its seed.
 *
 *   pnpm bench:overload [--capacity 40] [--latency 50] [--timeout 1000] [--seconds 30] [--seed 7]
 */
import { writeFileSync } from 'node:fs'
import { createAdaptiveLimiter, InflightCounter } from '@sluice/core'
import {
  type Gate,
  ManualClock,
  type RequestRecord,
  runLoad,
  SimulatedService,
} from '../packages/core/src/overload/simulation.test-util.js'
import { seededRandom } from '../packages/core/src/testing/seeded-random.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const CAPACITY = option('capacity', 40)
const LATENCY = option('latency', 50)
const TIMEOUT = option('timeout', 1000)
const SECONDS = option('seconds', 30)
const SEED = option('seed', 7)
const RPS = (CAPACITY * 1000) / LATENCY
const WARMUP_MS = 5_000
const CRITICAL_SHARE = 0.1

type MakeGate = (clock: ManualClock) => { gate: Gate; limit?: () => number }

const adaptiveGate =
  (options: Parameters<typeof createAdaptiveLimiter>[0] = {}): MakeGate =>
  (clock) => {
    const limiter = createAdaptiveLimiter({ clock, ...options })
    return {
      limit: () => limiter.limit,
      gate: (className) => {
        const result = limiter.acquire(className)
        if (result instanceof Promise) return result.then((r) => (r.admitted ? r : undefined))
        return (result as Awaited<typeof result>).admitted ? (result as { release(): void }) : undefined
      },
    }
  }

/** What concurrencyLimit does per request: an InflightCounter, no queue. */
const fixedGate =
  (limit: number): MakeGate =>
  () => {
    const counter = new InflightCounter()
    return {
      limit: () => limit,
      gate: () => (counter.count('service') < limit ? counter.acquire('service') : undefined),
    }
  }

const ROWS: { label: string; make: MakeGate }[] = [
  { label: 'no limiter', make: () => ({ gate: () => ({ release() {} }) }) },
  { label: `concurrencyLimit ${CAPACITY} (right)`, make: fixedGate(CAPACITY) },
  { label: `concurrencyLimit ${CAPACITY / 2} (half)`, make: fixedGate(CAPACITY / 2) },
  { label: `concurrencyLimit ${CAPACITY * 2} (double)`, make: fixedGate(CAPACITY * 2) },
  { label: 'adaptive gradient2', make: adaptiveGate({ algorithm: 'gradient2' }) },
  { label: 'adaptive vegas', make: adaptiveGate({ algorithm: 'vegas' }) },
  { label: 'adaptive aimd', make: adaptiveGate({ algorithm: 'aimd' }) },
  {
    label: 'adaptive gradient2 + priorities',
    make: adaptiveGate({ classes: [{ name: 'critical', reserve: 0.1 }, 'default'] }),
  },
]

interface Run {
  records: RequestRecord[]
  series: { time: number; limit: number | undefined }[]
}

async function run(
  make: MakeGate,
  load: (time: number) => number,
  events: { at: number; capacity: number }[] = [],
  durationMs = SECONDS * 1000,
): Promise<Run> {
  const clock = new ManualClock(SEED)
  const service = new SimulatedService(clock, CAPACITY)
  const { gate, limit } = make(clock)
  const series: Run['series'] = []
  const records = await runLoad({
    clock,
    service,
    gate,
    random: seededRandom(SEED + 1),
    rate: (time) => load(time) * RPS,
    durationMs,
    workMs: LATENCY,
    timeoutMs: TIMEOUT,
    criticalShare: CRITICAL_SHARE,
    sampleEveryMs: 100,
    onSample: (time) => {
      for (const event of events) if (event.at === time) service.setCapacity(event.capacity)
      series.push({ time, limit: limit?.() })
    },
  })
  return { records, series }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN

function summarize(records: RequestRecord[]) {
  const steady = records.filter((r) => r.at >= WARMUP_MS)
  const seconds = (SECONDS * 1000 - WARMUP_MS) / 1000
  const ok = steady.filter((r) => r.result === 'ok').length
  const admitted = steady
    .filter((r) => r.result !== 'refused')
    .map((r) => r.latencyMs)
    .sort((a, b) => a - b)
  const critical = steady.filter((r) => r.class === 'critical')
  return {
    goodput: ok / seconds / RPS,
    p50: quantile(admitted, 0.5),
    p99: quantile(admitted, 0.99),
    refused: steady.filter((r) => r.result === 'refused').length / steady.length,
    critical: critical.filter((r) => r.result === 'ok').length / critical.length,
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`
const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)}` : '—')

const unloaded = summarize((await run(ROWS[0]?.make as MakeGate, () => 0.5)).records)
console.log(
  `service: ${CAPACITY} concurrent at ${LATENCY} ms (±25 %), capacity ${RPS} requests/s; client timeout ${TIMEOUT} ms; ` +
    `${SECONDS} s per run, first ${WARMUP_MS / 1000} s not counted; ${CRITICAL_SHARE * 100} % of requests critical; seed ${SEED}`,
)
console.log(`unloaded (×0.5, no limiter): p50 ${ms(unloaded.p50)} ms, p99 ${ms(unloaded.p99)} ms\n`)
console.log(
  '| limiter | load | goodput (of capacity) | p50 admitted ms | p99 admitted ms | refused | critical success |',
)
console.log('|---|---|---|---|---|---|---|')
for (const row of ROWS) {
  for (const load of [1, 2, 3, 5]) {
    const s = summarize((await run(row.make, () => load)).records)
    console.log(
      `| ${row.label} | ×${load} | ${pct(s.goodput)} | ${ms(s.p50)} | ${ms(s.p99)} | ${pct(s.refused)} | ${pct(s.critical)} |`,
    )
  }
}

// Capacity halves at 20 s and comes back at 40 s, under ×2 load.
const HALVE_AT = 20_000
const RESTORE_AT = 40_000
const CHANGE_MS = 60_000
const changes = [
  { at: HALVE_AT, capacity: CAPACITY / 2 },
  { at: RESTORE_AT, capacity: CAPACITY },
]
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
const limitsBetween = (series: Run['series'], from: number, to: number) =>
  series.filter((s) => s.time > from && s.time <= to).map((s) => s.limit as number)

console.log(
  `\nCapacity ${CAPACITY} → ${CAPACITY / 2} at ${HALVE_AT / 1000} s → ${CAPACITY} at ${RESTORE_AT / 1000} s, ×2 load:\n`,
)
console.log(
  '| algorithm | limit before | limit halved (mean of its last 5 s) | settled after halving | risen back after restoring |',
)
console.log('|---|---|---|---|---|')
const plotted: { label: string; run: Run }[] = []
for (const algorithm of ['gradient2', 'vegas', 'aimd'] as const) {
  const result = await run(adaptiveGate({ algorithm }), () => 2, changes, CHANGE_MS)
  plotted.push({ label: algorithm, run: result })
  const before = mean(limitsBetween(result.series, HALVE_AT - 5_000, HALVE_AT))
  const halved = mean(limitsBetween(result.series, RESTORE_AT - 5_000, RESTORE_AT))
  // Settled: from then until the restore the limit stays within 25 % of where it ended up.
  const during = result.series.filter((s) => s.time > HALVE_AT && s.time <= RESTORE_AT)
  const unsettled = during.filter((s) => Math.abs((s.limit as number) - halved) > 0.25 * halved).at(-1)
  const settled = ((unsettled?.time ?? HALVE_AT) - HALVE_AT) / 1000
  // Risen back: the first sample after the restore at 90 % of the limit before the halving.
  const back = result.series.find((s) => s.time > RESTORE_AT && (s.limit as number) >= 0.9 * before)
  const risen = back ? `${((back.time - RESTORE_AT) / 1000).toFixed(1)} s` : 'not within 20 s'
  console.log(`| ${algorithm} | ${before.toFixed(0)} | ${halved.toFixed(0)} | ${settled.toFixed(1)} s | ${risen} |`)
}

writeFileSync(new URL('./overload.svg', import.meta.url), chart(plotted))
console.log('\nwrote bench/overload.svg')

/** One panel per algorithm: the limit (blue) and the p99 latency of each half second (orange), capacity shaded. */
function chart(data: { label: string; run: Run }[]): string {
  const width = 1080
  const panelHeight = 150
  const gap = 34
  const left = 120
  const right = 70
  const top = 50
  const plotWidth = width - left - right
  const limitMax = CAPACITY * 3
  const latencyMax = 4 * LATENCY
  const height = top + data.length * (panelHeight + gap) + 40
  const x = (t: number) => (left + (t / CHANGE_MS) * plotWidth).toFixed(1)
  const parts: string[] = [
    `<text x="10" y="22" font-size="15" font-weight="bold">adaptiveConcurrency: the limit and the latency as the capacity halves (${HALVE_AT / 1000} s) and comes back (${RESTORE_AT / 1000} s), ×2 load</text>`,
    `<text x="10" y="40" font-size="11" fill="#555"><tspan fill="#2f7ed8">━ limit (left axis)</tspan>   <tspan fill="#e8743b">━ p99 latency of admitted requests per 0.5 s, ms (right axis)</tspan>   <tspan fill="#999">▒ the service's capacity N</tspan></text>`,
  ]
  data.forEach(({ label, run: result }, i) => {
    const y0 = top + i * (panelHeight + gap)
    const yLimit = (v: number) => (y0 + panelHeight - (Math.min(v, limitMax) / limitMax) * panelHeight).toFixed(1)
    const yLatency = (v: number) => (y0 + panelHeight - (Math.min(v, latencyMax) / latencyMax) * panelHeight).toFixed(1)
    parts.push(
      `<rect x="${left}" y="${y0}" width="${plotWidth}" height="${panelHeight}" fill="#fafafa" stroke="#ccc"/>`,
      `<text x="${left - 10}" y="${y0 + 20}" font-size="13" text-anchor="end">${label}</text>`,
      `<text x="${left - 4}" y="${Number(yLimit(limitMax)) + 10}" font-size="10" text-anchor="end">${limitMax}</text>`,
      `<text x="${left - 4}" y="${Number(yLimit(0))}" font-size="10" text-anchor="end">0</text>`,
      `<text x="${left + plotWidth + 4}" y="${Number(yLatency(latencyMax)) + 10}" font-size="10">${latencyMax} ms</text>`,
      `<text x="${left + plotWidth + 4}" y="${Number(yLatency(0))}" font-size="10">0</text>`,
    )
    // The capacity N as a band from 0 to N on the limit's axis.
    const capacityAt = (t: number) => (t >= HALVE_AT && t < RESTORE_AT ? CAPACITY / 2 : CAPACITY)
    const band = [0, HALVE_AT, HALVE_AT, RESTORE_AT, RESTORE_AT, CHANGE_MS].map(
      (t, j) => `${x(t)},${yLimit(capacityAt(j % 2 === 1 ? t - 1 : t))}`,
    )
    parts.push(`<polygon points="${x(0)},${yLimit(0)} ${band.join(' ')} ${x(CHANGE_MS)},${yLimit(0)}" fill="#e6e6e6"/>`)
    const latency: string[] = []
    for (let t = 0; t < CHANGE_MS; t += 500) {
      const inBucket = result.records
        .filter((r) => r.result !== 'refused' && r.at >= t && r.at < t + 500)
        .map((r) => r.latencyMs)
        .sort((a, b) => a - b)
      if (inBucket.length > 0) latency.push(`${x(t + 250)},${yLatency(quantile(inBucket, 0.99))}`)
    }
    parts.push(`<polyline points="${latency.join(' ')}" fill="none" stroke="#e8743b" stroke-width="1.2"/>`)
    const limits = result.series.map((s) => `${x(s.time)},${yLimit(s.limit as number)}`)
    parts.push(`<polyline points="${limits.join(' ')}" fill="none" stroke="#2f7ed8" stroke-width="1.6"/>`)
  })
  const axisY = top + data.length * (panelHeight + gap) - gap + 14
  for (let t = 0; t <= CHANGE_MS; t += 10_000) {
    parts.push(`<text x="${x(t)}" y="${axisY}" font-size="10" text-anchor="middle">${t / 1000} s</text>`)
  }
  parts.push(
    `<text x="10" y="${height - 10}" font-size="11" fill="#555">Simulated service: ${CAPACITY} concurrent at ${LATENCY} ms, client timeout ${TIMEOUT} ms, seed ${SEED}, simulated clock; pnpm bench:overload</text>`,
  )
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`
}
