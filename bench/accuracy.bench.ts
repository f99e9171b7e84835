/**
 * How far each algorithm strays from its stated limit, measured: seeded traces (steady, Poisson,
 * bursty, on-off, clients from far under to far over the limit, and one shaped like Cloudflare's
 * traffic) through the real transitions on a MemoryStore with a simulated clock, each decision
 * held against an exact sliding log over the same algorithm's own admitted history. Then the
 * memory per key, and bench/accuracy.svg: one bursty client's admitted count over the trailing
 * window under each algorithm, against the limit and the algorithm's bound.
 *
 * The store is a parameter of `measure` (bench/accuracy/simulate.ts): a store spread over
 * processes (SyncedStore) plugs in there once it exists, and its over-admission adds to the
 * algorithm's own.
 *
 *   pnpm bench:accuracy [--minutes 60] [--scale 1] [--seed 17]
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { MemoryStore, maxAdmittedInWindow, type PolicyOptions, parsePolicies, parsePolicy } from '@sluice/core'
import { seededRandom } from '@sluice/core/testing'
import { admittedSeries, measure } from './accuracy/simulate.js'
import { arrivals, standardTraces } from './accuracy/traces.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const MINUTES = option('minutes', 60)
const SCALE = option('scale', 1)
const SEED = option('seed', 17)
const LIMIT = 100
const WINDOW = 60_000

const base = { limit: LIMIT, window: WINDOW }
const CONFIGS: { label: string; policy: PolicyOptions }[] = [
  { label: 'fixed-window', policy: { ...base, algorithm: 'fixed-window' } },
  ...[1, 2, 4, 10, 60].map((precision) => ({
    label: `sliding-window, precision ${precision}`,
    policy: { ...base, algorithm: 'sliding-window' as const, precision },
  })),
  { label: 'sliding-log', policy: { ...base, algorithm: 'sliding-log' } },
  { label: 'token-bucket (burst 100)', policy: { ...base, algorithm: 'token-bucket' } },
  { label: 'gcra (burst 100)', policy: { ...base, algorithm: 'gcra' } },
  { label: 'gcra (burst 10)', policy: { ...base, algorithm: 'gcra', burst: 10 } },
]

// Memory per key: the state's bytes as Redis stores it (little-endian doubles, decide.ts), and
// the MemoryStore's heap growth per key with many keys, after a full garbage collection, each
// in a fresh process (in this one, the traces' garbage blurs the figure).
const MEMORY_ROWS: [label: string, policy: PolicyOptions, perKey: number, keyCount: number][] = [
  ...CONFIGS.filter((c) => c.label !== 'gcra (burst 10)').map(
    ({ label, policy }) => [label, policy, 1, 100_000] as [string, PolicyOptions, number, number],
  ),
  ['sliding-log, full window', CONFIGS.find((c) => c.label === 'sliding-log')?.policy as PolicyOptions, 100, 5_000],
]
const redisBytes = (p: PolicyOptions, entries: number) => {
  switch (p.algorithm) {
    case 'fixed-window':
    case 'token-bucket':
      return 16
    case 'gcra':
      return 8
    case 'sliding-log':
      return 16 * entries
    default:
      return 8 * ((p.precision ?? 1) + 2)
  }
}

/** In a child: heap bytes per key after `perKey` requests on each of `keyCount` keys. */
function heapPerKey(row: number): number {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with node --expose-gc (pnpm bench:accuracy does)')
  const [, policy, perKey, keyCount] = MEMORY_ROWS[row] as (typeof MEMORY_ROWS)[number]
  const keys = Array.from({ length: keyCount }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}:${i}`)
  const set = parsePolicies([policy])
  let clock = 1_700_000_000_000
  const heap = () => {
    gc()
    gc()
    return process.memoryUsage().heapUsed
  }
  const before = heap()
  const store = new MemoryStore({ maxKeys: 1_000_000, now: () => clock })
  for (let r = 0; r < perKey; r++) {
    clock += 100 // distinct times, as real requests: the log keeps one entry per time
    for (const key of keys) store.consume(key, set, 1)
  }
  const grown = heap() - before
  if (store.size !== keyCount) throw new Error(`expected ${keyCount} keys, the store holds ${store.size}`)
  return grown / keyCount
}

if (args.includes('--memory')) {
  console.log(heapPerKey(option('memory', 0)))
  process.exit(0)
}

const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(part === 0 ? 0 : 3)} %`
const started = performance.now()
const traces = standardTraces(LIMIT, WINDOW, MINUTES * 60_000, SCALE, SEED)

console.log(`node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}; seed ${SEED}, ${MINUTES} simulated minutes`)
console.log(`limit ${LIMIT} per ${WINDOW / 1000} s, every request of cost 1, each algorithm on its own MemoryStore\n`)
console.log('Bounds (maxAdmittedInWindow: the most any stream can get in a window of length W):\n')
console.log('| policy | bound | × limit |')
console.log('|---|---:|---:|')
for (const { label, policy } of CONFIGS) {
  const bound = maxAdmittedInWindow(parsePolicy(policy))
  console.log(`| ${label} | ${bound} | ${(bound / LIMIT).toFixed(2)} |`)
}

const worst = new Map<string, number>()
for (const trace of traces) {
  const requests = trace.clients.reduce((sum, c) => sum + c.times.length, 0)
  const over = trace.clients.filter((c) => c.rate > 1).length
  console.log(`\n### ${trace.name}: ${trace.clients.length} clients (${over} over the limit), ${requests} requests\n`)
  console.log(
    '| policy | most in any window (× limit) | decisions differing from the exact log | allowed past it | denied under it | differing, clients at or under the limit | clients over the limit: admitted ÷ limit, mean (max) |',
  )
  console.log('|---|---:|---:|---:|---:|---:|---:|')
  for (const { label, policy } of CONFIGS) {
    const a = await measure(trace, policy)
    worst.set(label, Math.max(worst.get(label) ?? 0, a.maxInWindow))
    const rate = a.overClients === 0 ? '—' : `${a.overAdmittedMean.toFixed(3)} (${a.overAdmittedMax.toFixed(3)})`
    console.log(
      `| ${label} | ${a.maxInWindow} (${a.maxInWindowRatio.toFixed(2)}) | ${pct(a.allowedPast + a.deniedUnder, a.decisions)} | ${pct(a.allowedPast, a.decisions)} | ${pct(a.deniedUnder, a.decisions)} | ${pct(a.quietDiffering, a.quietDecisions)} | ${rate} |`,
    )
  }
}

console.log('\nWorst case measured over all traces, against the bound:\n')
console.log('| policy | most in any window, measured | bound | measured ÷ bound |')
console.log('|---|---:|---:|---:|')
for (const { label, policy } of CONFIGS) {
  const bound = maxAdmittedInWindow(parsePolicy(policy))
  const measured = worst.get(label) as number
  console.log(`| ${label} | ${measured} | ${bound} | ${(measured / bound).toFixed(2)} |`)
}
const simulated = ((performance.now() - started) / 1000).toFixed(1)

console.log('\nMemory per key (heap growth after a full gc, in a fresh process per row):\n')
console.log('| policy | requests per key | Redis state bytes | MemoryStore heap bytes per key |')
console.log('|---|---:|---:|---:|')
for (const [row, [label, policy, perKey, keyCount]] of MEMORY_ROWS.entries()) {
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--conditions=source', fileURLToPath(import.meta.url), '--memory', String(row)],
    { encoding: 'utf8' },
  )
  const bytes = Number(output.trim().split('\n').pop())
  console.log(`| ${label} | ${perKey} | ${redisBytes(policy, perKey)} | ${Math.round(bytes)} (${keyCount} keys) |`)
}

// The plot: one bursty client at 1.5× the limit for 10 minutes.
const PLOT_MS = 10 * 60_000
const plotTimes = arrivals({ shape: 'bursty', rate: 1.5 }, LIMIT, WINDOW, PLOT_MS, seededRandom(SEED * 31 + 7))
const plotted = [
  CONFIGS[0],
  CONFIGS[1],
  CONFIGS.find((c) => c.label.endsWith('precision 10')),
  CONFIGS.find((c) => c.label === 'sliding-log'),
  CONFIGS.find((c) => c.label.startsWith('token-bucket')),
  CONFIGS.find((c) => c.label === 'gcra (burst 10)'),
] as { label: string; policy: PolicyOptions }[]
const panels = []
for (const { label, policy } of plotted) {
  panels.push({
    label,
    bound: maxAdmittedInWindow(parsePolicy(policy)),
    series: await admittedSeries(plotTimes, policy),
  })
}
writeFileSync(new URL('./accuracy.svg', import.meta.url), chart(panels, plotTimes.length))
console.log(`\nwrote bench/accuracy.svg; traces simulated in ${simulated} s`)

/** One panel per policy: the trailing window's admitted count after each request, time across. */
function chart(data: { label: string; bound: number; series: { at: number; inWindow: number }[] }[], offered: number) {
  const width = 1080
  const panelHeight = 120
  const gap = 26
  const left = 250
  const right = 30
  const top = 46
  const plotWidth = width - left - right
  const yMax = 2 * LIMIT
  const height = top + data.length * (panelHeight + gap) + 30
  const x = (t: number) => (left + (t / PLOT_MS) * plotWidth).toFixed(1)
  const parts: string[] = [
    `<text x="10" y="24" font-size="15" font-weight="bold">Admitted in the trailing minute, one bursty client offered 1.5× a limit of ${LIMIT}/min</text>`,
  ]
  data.forEach(({ label, bound, series }, i) => {
    const y0 = top + i * (panelHeight + gap)
    const y = (v: number) => (y0 + panelHeight - (Math.min(v, yMax) / yMax) * panelHeight).toFixed(1)
    const peak = Math.max(...series.map((s) => s.inWindow))
    parts.push(
      `<rect x="${left}" y="${y0}" width="${plotWidth}" height="${panelHeight}" fill="#fafafa" stroke="#ccc"/>`,
      `<text x="${left - 10}" y="${y0 + 40}" font-size="13" text-anchor="end">${label}</text>`,
      `<text x="${left - 10}" y="${y0 + 60}" font-size="11" text-anchor="end" fill="#555">peak ${peak} (${(peak / LIMIT).toFixed(2)}×), bound ${bound}</text>`,
      `<line x1="${left}" y1="${y(LIMIT)}" x2="${left + plotWidth}" y2="${y(LIMIT)}" stroke="#d9534f" stroke-width="1.5"/>`,
      `<line x1="${left}" y1="${y(bound)}" x2="${left + plotWidth}" y2="${y(bound)}" stroke="#888" stroke-dasharray="5 4"/>`,
      `<text x="${left + 4}" y="${Number(y(LIMIT)) - 3}" font-size="10" fill="#d9534f">limit ${LIMIT}</text>`,
      `<text x="${left + 4}" y="${Number(y(bound)) + 11}" font-size="10" fill="#555">bound ${bound}</text>`,
    )
    // A step line: the count holds between requests (it only falls as old admissions leave, which
    // the next request shows; good enough at this scale).
    const points = series.map((s) => `${x(s.at)},${y(s.inWindow)}`).join(' ')
    parts.push(`<polyline points="${points}" fill="none" stroke="#2f7ed8" stroke-width="1.2"/>`)
  })
  const axisY = top + data.length * (panelHeight + gap) - gap + 14
  for (let m = 0; m <= PLOT_MS / 60_000; m++) {
    parts.push(`<text x="${x(m * 60_000)}" y="${axisY}" font-size="10" text-anchor="middle">${m} min</text>`)
  }
  parts.push(
    `<text x="10" y="${height - 10}" font-size="11" fill="#555">${offered} requests in bursts (mean 20, 0–50 ms apart), seed ${SEED}; each policy on its own MemoryStore, simulated clock; pnpm bench:accuracy</text>`,
  )
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`
}
