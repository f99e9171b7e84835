// HTTP overhead of sluice: hello-world throughput of Express, Koa and Hono (node-server) with no
// limiter, with sluice (memory store, one and two policies) and, for Express, with
// express-rate-limit under the same limits. Each server runs in its own process; on Linux the
// servers are pinned to one CPU and this load generator to another. Runs are interleaved
// (every target once per round, the order rotating) and summarised by medians.
//
// Rows `noop` and `headers` are references (see VARIANTS in ./http/config.ts).
//
//   pnpm bench:http     # env: BENCH_RUNS=7 BENCH_DURATION=5 BENCH_CONNECTIONS=32
//                       #      BENCH_FRAMEWORKS=express,koa,hono BENCH_VARIANTS=none,sluice-1 (a subset)
//                       #      BENCH_PIN=0 (no CPU pinning)
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { CLIENT_HEADER, CLIENTS, type Framework, LIMITS, VARIANTS, type Variant } from './http/config.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 7)
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5)
const WARMUP_S = 2
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS?.split(',') ?? Object.keys(VARIANTS)) as Framework[]
/** Always includes `none`, the baseline of every ratio. */
const ONLY_VARIANTS = process.env.BENCH_VARIANTS ? new Set(['none', ...process.env.BENCH_VARIANTS.split(',')]) : undefined

interface Target {
  framework: Framework
  variant: Variant
  child: ChildProcess
  url: string
}

interface Sample {
  rps: number
  /** Server CPU time (user + system, all threads) per request, in µs. */
  cpuPerRequest: number
  p99: number
  non2xx: number
  errors: number
}

const pinned = process.platform === 'linux' && cpus().length >= 2 && process.env.BENCH_PIN !== '0'
if (pinned) spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' })

function startServer(framework: Framework, variant: Variant): Promise<Target> {
  const script = fileURLToPath(new URL(`./http/${framework}.ts`, import.meta.url))
  const node = [process.execPath, '--import', 'tsx', '--conditions=source', script, variant]
  const [command, ...args] = pinned ? ['taskset', '-c', '1', ...node] : node
  const child = spawn(command!, args, {
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    let output = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening (\d+)/.exec(output)
      if (match) resolve({ framework, variant, child, url: `http://127.0.0.1:${match[1]}` })
    })
    child.once('exit', (code) => reject(new Error(`${framework} ${variant} server exited (${code}): ${output}`)))
  })
}

/** One request template per client id, so the limiters see CLIENTS keys, not one. */
const requests = Array.from({ length: CLIENTS }, (_, i) => ({
  method: 'GET' as const,
  path: '/',
  headers: { [CLIENT_HEADER]: `client-${i}` },
}))

/** The CPU time (user + system, µs) a server has used, as it reports it over IPC (see `listening`). */
async function cpuMicros(child: ChildProcess): Promise<number> {
  child.send('cpu')
  const [usage] = (await once(child, 'message')) as [NodeJS.CpuUsage]
  return usage.user + usage.system
}

async function load(target: Target, duration: number): Promise<Sample> {
  const cpuBefore = await cpuMicros(target.child)
  const result = await autocannon({ url: target.url, connections: CONNECTIONS, duration, requests })
  const cpu = (await cpuMicros(target.child)) - cpuBefore
  return {
    rps: result.requests.average,
    cpuPerRequest: cpu / result.requests.total,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** `items` starting at position `by`, wrapping around. */
function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}

const targets: Target[] = []
try {
  for (const framework of FRAMEWORKS) {
    for (const variant of VARIANTS[framework]) {
      if (!ONLY_VARIANTS || ONLY_VARIANTS.has(variant)) targets.push(await startServer(framework, variant))
    }
  }
  for (const target of targets) await load(target, WARMUP_S)

  // Each round visits every framework (order rotating) and, within a framework, every variant
  // back to back (order rotating), so a variant and its baseline are measured seconds apart.
  const samples = new Map<Target, Sample[]>(targets.map((t) => [t, []]))
  for (let round = 0; round < RUNS; round++) {
    for (const framework of rotate(FRAMEWORKS, round)) {
      for (const target of rotate(
        targets.filter((t) => t.framework === framework),
        round,
      )) {
        const sample = await load(target, DURATION_S)
        samples.get(target)!.push(sample)
        console.error(
          `round ${round + 1}/${RUNS}  ${framework.padEnd(7)} ${target.variant.padEnd(8)} ${Math.round(sample.rps)} req/s  ${sample.cpuPerRequest.toFixed(1)} µs CPU/req`,
        )
      }
    }
  }

  console.log(`
HTTP hello world: ${RUNS} interleaved runs of ${DURATION_S} s per row, ${CONNECTIONS} connections, ${CLIENTS} client keys
limits: 1 policy = ${LIMITS[0].limit}/${LIMITS[0].window / 1000}s, 2 policies = that + ${LIMITS[1].limit}/${LIMITS[1].window / 1000}s (nothing is denied)
node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ${pinned ? 'server pinned to CPU 1, load generator to CPU 0' : 'not pinned'}
ratios: median over runs of (row ÷ the same framework's no-middleware row in the same run)

| framework | middleware | req/s (median) | min–max | req/s ÷ none | server CPU µs/req (median) | CPU µs/req − none | CPU/req ÷ none | p99 ms | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|`)
  for (const target of targets) {
    const runs = samples.get(target)!
    const base = samples.get(targets.find((t) => t.framework === target.framework && t.variant === 'none')!)!
    const ratio = (metric: (s: Sample) => number) =>
      target.variant === 'none' ? '1' : median(runs.map((s, i) => metric(s) / metric(base[i]!))).toFixed(3)
    const extraCpu = median(runs.map((s, i) => s.cpuPerRequest - base[i]!.cpuPerRequest)).toFixed(1)
    const rps = runs.map((s) => s.rps)
    const failures = runs.reduce((n, s) => n + s.non2xx + s.errors, 0)
    console.log(
      `| ${target.framework} | ${label(target.variant)} | ${Math.round(median(rps))} | ${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))} | ${ratio((s) => s.rps)} | ${median(runs.map((s) => s.cpuPerRequest)).toFixed(1)} | ${extraCpu} | ${ratio((s) => s.cpuPerRequest)} | ${median(runs.map((s) => s.p99))} | ${failures} |`,
    )
  }
} finally {
  for (const target of targets) target.child.kill('SIGTERM')
}

function label(variant: Variant): string {
  return {
    none: 'none',
    noop: 'reference: a middleware that does nothing',
    headers: 'reference: a middleware that sets 2 constant headers',
    'sluice-1': 'sluice, 1 policy',
    'sluice-2': 'sluice, 2 policies',
    'quiet-1': 'sluice, 1 policy, headers: false',
    'erl-1': 'express-rate-limit, 1 window',
    'erl-2': 'express-rate-limit, 2 windows',
  }[variant]
}
