/**
 * Decisions per second through DurableObjectStore and RateLimiterObject in workerd (Miniflare,
 * offline): one Worker request runs `n` consumes, one at a time or many in flight, on one key
 * (one object) or many keys (one object each). Everything runs in one local workerd process, so
 * this is the object's own cost (JSON, storage write, transitions), not a network round trip.
 * Also the CPU time workerd spent per decision (user + system, from /proc on Linux), which a busy
 * machine disturbs less than the wall-clock rate.
 *
 *   pnpm bench:durable-object [--n 3000] [--rounds 3]
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { bundleWorker, serveWorker } from '../test/edge/workerd.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] as string)
}
const N = Number(option('n', '3000'))
const ROUNDS = Number(option('rounds', '3'))

const entry = fileURLToPath(new URL('../test/edge/fixture/limiter-worker.ts', import.meta.url))
const { script } = await bundleWorker(entry)
const mf = await serveWorker(script, { durableObjects: { LIMITER: 'RateLimiterObject', QUICK: 'QuickCleanupObject' } })

/** CPU milliseconds (user + system) used so far by the workerd processes this process started; NaN off Linux. */
function workerdCpuMs(): number {
  try {
    const pids = execFileSync('pgrep', ['-P', String(process.pid), 'workerd'], { encoding: 'utf8' }).split('\n')
    let ticks = 0
    for (const pid of pids.filter(Boolean)) {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      ticks += Number(fields[11]) + Number(fields[12]) // utime and stime, fields 14 and 15
    }
    return ticks * 10 // USER_HZ is 100 on Linux
  } catch {
    return Number.NaN
  }
}

const runs = [
  { name: 'one object, 1 in flight', query: 'inFlight=1&keys=1' },
  { name: 'one object, 32 in flight', query: 'inFlight=32&keys=1' },
  { name: 'one object, 64 keys (shards: 1), 32 in flight', query: 'inFlight=32&keys=64&shards=1' },
  { name: '64 objects (one per key), 32 in flight', query: 'inFlight=32&keys=64' },
  { name: '4 shards, 64 keys, 32 in flight', query: 'inFlight=32&keys=64&shards=4' },
]

try {
  await mf.dispatchFetch(`http://bench/bench?n=500&inFlight=8&keys=64`) // warm-up
  console.log(
    `| run | decisions/s | workerd CPU µs per decision |\n| --- | --- | --- |\n(medians of ${ROUNDS} rounds of ${N})`,
  )
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  for (const run of runs) {
    const rates: number[] = []
    const cpu: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now()
      const cpuBefore = workerdCpuMs()
      const response = await mf.dispatchFetch(`http://bench/bench?n=${N}&${run.query}`)
      if (response.status !== 200) throw new Error(await response.text())
      await response.text()
      rates.push(N / ((performance.now() - started) / 1000))
      cpu.push(((workerdCpuMs() - cpuBefore) * 1000) / N)
    }
    console.log(`| ${run.name} | ${Math.round(median(rates))} | ${Math.round(median(cpu))} |`)
  }
} finally {
  await mf.dispose()
}
