// HTTP overhead of sluice: hello-world throughput of Express, Koa, Hono (node-server) and Fastify with no
// limiter, with sluice (memory store, one and two policies) and with each framework's usual peer
// under the same limits (express-rate-limit, koa-ratelimit's memory driver, hono-rate-limiter,
// @fastify/rate-limit). Each server runs in its own process; on Linux the
// servers are pinned to one CPU and this load generator to another. Runs are interleaved
// (every target once per round, the order rotating) and summarised by medians.
//
// Rows `noop` and `headers` are references (see VARIANTS in ./http/config.ts).
//
//   pnpm bench:http     # env: BENCH_RUNS=6 BENCH_DURATION=2 BENCH_CONNECTIONS=32
//                       #      BENCH_FRAMEWORKS=express,koa,hono,fastify,nest-express,nest-fastify BENCH_VARIANTS=none,sluice-1 (a subset)
//                       #      BENCH_PIN=0 (no CPU pinning)
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import {
  CLIENT_HEADER,
  CLIENTS,
  type Framework,
  LIMITS,
  loaderFor,
  VARIANT_LABELS,
  VARIANTS,
  type Variant,
} from './http/config.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 6)
const DURATION_S = Number(process.env.BENCH_DURATION ?? 2)
const WARMUP_S = 2
/**
 * Untimed load on a server just before each of its samples. The baseline runs every other slot
 * and the rest idle for a minute in between, and a server's first second back costs more: without
 * this, a middleware that does nothing read 15-60 % dearer than no middleware on Express. Some of
 * that bias remains (on Koa especially): the control row measures it.
 */
const PRIME_S = 1
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS?.split(',') ?? Object.keys(VARIANTS)) as Framework[]
/** Always includes `none`, the baseline of every ratio. */
const ONLY_VARIANTS = process.env.BENCH_VARIANTS
  ? new Set(['none', ...process.env.BENCH_VARIANTS.split(',')])
  : undefined

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
  /** The user-mode part: JavaScript and V8, without the kernel's share (sockets, loopback TCP). */
  userPerRequest: number
  p99: number
  non2xx: number
  errors: number
}

const pinned = process.platform === 'linux' && cpus().length >= 2 && process.env.BENCH_PIN !== '0'
if (pinned) spawnSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' })

function startServer(framework: Framework, variant: Variant): Promise<Target> {
  const script = fileURLToPath(new URL(`./http/${framework}.ts`, import.meta.url))
  const node = [process.execPath, '--import', loaderFor(framework), '--conditions=source', script, variant]
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

/** The CPU time (µs) a server has used, as it reports it over IPC (see `listening`). */
async function cpuUsage(child: ChildProcess): Promise<NodeJS.CpuUsage> {
  child.send('cpu')
  const [usage] = (await once(child, 'message')) as [NodeJS.CpuUsage]
  return usage
}

/**
 * One autocannon run of `prime + duration` seconds; only the last `duration` seconds are sampled
 * (responses counted, server CPU read at both ends). The first seconds are untimed on purpose, see
 * PRIME_S, and one run instead of two spares autocannon's setup (about a second for 1 024 request
 * templates) and its rounding of every run up to whole seconds.
 */
async function load(target: Target, prime: number, duration: number): Promise<Sample> {
  let responses = 0
  let counting = false
  let before: NodeJS.CpuUsage | undefined
  let started = 0
  const run = new Promise<autocannon.Result>((resolve, reject) => {
    const options = { url: target.url, connections: CONNECTIONS, duration: prime + duration, requests }
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
    instance.on('response', () => {
      if (counting) responses++
    })
  })
  const timer = setTimeout(async () => {
    before = await cpuUsage(target.child)
    counting = true
    started = performance.now()
  }, prime * 1000)
  const result = await run
  clearTimeout(timer)
  const after = await cpuUsage(target.child)
  const seconds = (performance.now() - started) / 1000
  if (!before || responses === 0) throw new Error(`${target.framework} ${target.variant}: nothing was sampled`)
  const user = after.user - before.user
  return {
    rps: responses / seconds,
    cpuPerRequest: (user + after.system - before.system) / responses,
    userPerRequest: user / responses,
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

/** The average of two samples of the same server: a baseline for what was measured between them. */
function meanSample(a: Sample, b: Sample): Sample {
  const mean = (metric: (s: Sample) => number) => (metric(a) + metric(b)) / 2
  return {
    rps: mean((s) => s.rps),
    cpuPerRequest: mean((s) => s.cpuPerRequest),
    userPerRequest: mean((s) => s.userPerRequest),
    p99: mean((s) => s.p99),
    non2xx: a.non2xx + b.non2xx,
    errors: a.errors + b.errors,
  }
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
  for (const target of targets) await load(target, WARMUP_S, 1)

  // Each round visits every framework (order rotating) and, within it, measures the no-middleware
  // baseline before the first variant, between every two and after the last (variant order
  // rotating): each variant is compared with the mean of the two baselines that bracket it, seconds
  // apart, which cancels most of the drift in what else this machine is doing.
  const samples = new Map<Target, Sample[]>(targets.map((t) => [t, []]))
  const baselines = new Map<Target, Sample[]>(targets.map((t) => [t, []]))
  const measure = async (target: Target, round: number) => {
    const sample = await load(target, PRIME_S, DURATION_S)
    samples.get(target)!.push(sample)
    console.error(
      `round ${round + 1}/${RUNS}  ${target.framework.padEnd(7)} ${target.variant.padEnd(8)} ${Math.round(sample.rps)} req/s  ${sample.cpuPerRequest.toFixed(1)} µs CPU/req`,
    )
    return sample
  }
  for (let round = 0; round < RUNS; round++) {
    for (const framework of rotate(FRAMEWORKS, round)) {
      const none = targets.find((t) => t.framework === framework && t.variant === 'none')!
      const variants = targets.filter((t) => t.framework === framework && t !== none)
      let before = await measure(none, round)
      for (const target of rotate(variants, round)) {
        await measure(target, round)
        const after = await measure(none, round)
        baselines.get(target)!.push(meanSample(before, after))
        before = after
      }
    }
  }

  console.log(`
HTTP hello world: ${RUNS} interleaved runs of ${DURATION_S} s per row (the baseline between every two), ${CONNECTIONS} connections, ${CLIENTS} client keys
limits: 1 policy = ${LIMITS[0].limit}/${LIMITS[0].window / 1000}s, 2 policies = that + ${LIMITS[1].limit}/${LIMITS[1].window / 1000}s (nothing is denied)
node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ${pinned ? 'server pinned to CPU 1, load generator to CPU 0' : 'not pinned'}
ratios and differences: median over runs of (row ÷ or − the mean of the same framework's two no-middleware runs just before and after it)
beyond control: median over runs of (row − its baseline) − (control − its baseline), and that as a share of the no-middleware CPU/req

| framework | middleware | req/s (median) | min–max | req/s ÷ none | server CPU µs/req (median) | CPU µs/req − none | CPU/req ÷ none | user CPU/req ÷ none | CPU µs/req beyond control | beyond control ÷ none | p99 ms | non-2xx + errors |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`)
  /** Per run, a row's CPU µs/req over the baseline measured around it. */
  const extraCpuPerRun = (target: Target) =>
    samples.get(target)!.map((s, i) => s.cpuPerRequest - baselines.get(target)![i]!.cpuPerRequest)
  for (const target of targets) {
    const runs = samples.get(target)!
    const base = baselines.get(target)!
    const ratio = (metric: (s: Sample) => number) =>
      target.variant === 'none' ? '1' : median(runs.map((s, i) => metric(s) / metric(base[i]!))).toFixed(3)
    const extraCpu = target.variant === 'none' ? '0' : median(extraCpuPerRun(target)).toFixed(1)
    const control = targets.find((t) => t.framework === target.framework && t.variant === 'control')
    const none = targets.find((t) => t.framework === target.framework && t.variant === 'none')!
    const beyond =
      control && target.variant !== 'none' && target !== control
        ? median(extraCpuPerRun(target).map((extra, i) => extra - extraCpuPerRun(control)[i]!))
        : undefined
    const noneCpu = median(samples.get(none)!.map((s) => s.cpuPerRequest))
    const beyondCells =
      beyond === undefined ? '– | –' : `${beyond.toFixed(1)} | ${((100 * beyond) / noneCpu).toFixed(1)} %`
    const rps = runs.map((s) => s.rps)
    const failures = runs.reduce((n, s) => n + s.non2xx + s.errors, 0)
    console.log(
      `| ${target.framework} | ${VARIANT_LABELS[target.variant]} | ${Math.round(median(rps))} | ${Math.round(Math.min(...rps))}–${Math.round(Math.max(...rps))} | ${ratio((s) => s.rps)} | ${median(runs.map((s) => s.cpuPerRequest)).toFixed(1)} | ${extraCpu} | ${ratio((s) => s.cpuPerRequest)} | ${ratio((s) => s.userPerRequest)} | ${beyondCells} | ${median(runs.map((s) => s.p99))} | ${failures} |`,
    )
  }
} finally {
  for (const target of targets) target.child.kill('SIGTERM')
}
