/**
 * Redis stores side by side, on a private redis-server this script starts (loopback, stopped by
 * PID at the end): sluice's RedisStore through createLimiter (coalescing on, its default, and
 * off), rate-limiter-flexible's
 * RateLimiterRedis (RateLimiterUnion for two limits) and express-rate-limit's store
 * rate-limit-redis (two stores stacked, as two middlewares would, for two limits).
 *
 * For each: decisions/s with 1 and 64 in flight on one connection (ioredis, unless the row names
 * iovalkey or node-redis: the same RedisStore on the other client libraries); Redis commands per
 * decision (INFO commandstats: top-level calls, i.e. round trips, and all calls including those
 * inside scripts); server CPU per decision (INFO cpu user+sys delta, which includes networking,
 * and commandstats usec of the top-level calls). Limits are high so nothing is denied.
 *
 * Then single-decision latency: one decision in flight, every contender on the same connection,
 * interleaved in blocks of 100 decisions (so that warm-up and load spikes land on all of them,
 * which the per-contender 1-in-flight column above cannot promise); median µs per decision, and
 * per decision over all blocks the scripts' µs in Redis and this process's CPU µs.
 *
 *   pnpm bench:redis [--rounds 3] [--sequential 5000] [--concurrent 40000] [--latency-blocks 30]
 */
import { createLimiter, type PolicyInput } from '@sluice/core'
import { type RedisClient, RedisStore } from '@sluice/redis'
import type { Options as ErlOptions } from 'express-rate-limit'
import { Redis } from 'ioredis'
import { Redis as Valkey } from 'iovalkey'
import RateLimitRedisStore from 'rate-limit-redis'
import { RateLimiterRedis, RateLimiterUnion } from 'rate-limiter-flexible'
import { createClient } from 'redis'
import { parseCommandStats, startRedisServer } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const ROUNDS = option('rounds', 3)
const SEQUENTIAL = option('sequential', 5000)
const CONCURRENT = option('concurrent', 40_000)
const LATENCY_BLOCKS = option('latency-blocks', 30)
const LATENCY_BLOCK = 100
const IN_FLIGHT = 64
const KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)
/** Commands a script sends to the server from inside; everything else came over the wire. */
const TOP_LEVEL = new Set(['evalsha', 'eval', 'script|load'])

type Decide = (key: string) => Promise<unknown>
/** One connection per client library, each to the same server. */
interface Clients {
  ioredis: Redis
  iovalkey: Valkey
  'node-redis': RedisClient
}
interface Contender {
  name: string
  limits: 1 | 2
  make: (clients: Clients) => Promise<Decide>
}

const sluice =
  (limits: PolicyInput[], coalesce = true, library: keyof Clients = 'ioredis') =>
  async (clients: Clients) => {
    const store = new RedisStore({ client: clients[library], prefix: 'sl:', coalesce })
    const limiter = createLimiter({ limits, store })
    return (key: string) => limiter.consume(key)
  }
const rlflx =
  (durations: number[]) =>
  async ({ ioredis: client }: Clients) => {
    const limiters = durations.map(
      (duration, i) => new RateLimiterRedis({ storeClient: client, points: 1e9, duration, keyPrefix: `rl${i}` }),
    )
    if (limiters.length === 1) return (key: string) => (limiters[0] as RateLimiterRedis).consume(key)
    const union = new RateLimiterUnion(...limiters)
    return (key: string) => union.consume(key)
  }
const rateLimitRedis =
  (windows: number[]) =>
  async ({ ioredis: client }: Clients) => {
    const stores = await Promise.all(
      windows.map(async (windowMs, i) => {
        const store = new RateLimitRedisStore({
          prefix: `rlr${i}:`,
          sendCommand: (...command: string[]) => client.call(...(command as [string, ...string[]])) as never,
        })
        await store.init({ windowMs } as ErlOptions)
        return store
      }),
    )
    return async (key: string) => {
      for (const store of stores) await store.increment(key)
    }
  }

const contenders: Contender[] = [
  { name: 'sluice RedisStore (sliding-window)', limits: 1, make: sluice(['1000000/min']) },
  {
    name: 'sluice RedisStore (fixed-window)',
    limits: 1,
    make: sluice([{ limit: 1e6, window: 60_000, algorithm: 'fixed-window' }]),
  },
  { name: 'sluice RedisStore (gcra)', limits: 1, make: sluice([{ limit: 1e6, window: 60_000, algorithm: 'gcra' }]) },
  {
    name: 'sluice RedisStore (sliding-log)',
    limits: 1,
    make: sluice([{ limit: 10_000, window: 60_000, algorithm: 'sliding-log' }]),
  },
  { name: 'sluice RedisStore (sliding-window), coalesce: false', limits: 1, make: sluice(['1000000/min'], false) },
  { name: 'sluice RedisStore (sliding-window), iovalkey', limits: 1, make: sluice(['1000000/min'], true, 'iovalkey') },
  {
    name: 'sluice RedisStore (sliding-window), node-redis',
    limits: 1,
    make: sluice(['1000000/min'], true, 'node-redis'),
  },
  {
    name: 'sluice RedisStore (sliding-window), node-redis, coalesce: false',
    limits: 1,
    make: sluice(['1000000/min'], false, 'node-redis'),
  },
  { name: 'rate-limiter-flexible RateLimiterRedis', limits: 1, make: rlflx([60]) },
  { name: 'express-rate-limit + rate-limit-redis', limits: 1, make: rateLimitRedis([60_000]) },
  { name: 'sluice RedisStore (sliding-window)', limits: 2, make: sluice(['1000000/min', '100000/s']) },
  {
    name: 'sluice RedisStore (sliding-window), coalesce: false',
    limits: 2,
    make: sluice(['1000000/min', '100000/s'], false),
  },
  {
    name: 'sluice RedisStore (sliding-window), iovalkey',
    limits: 2,
    make: sluice(['1000000/min', '100000/s'], true, 'iovalkey'),
  },
  {
    name: 'sluice RedisStore (sliding-window), node-redis',
    limits: 2,
    make: sluice(['1000000/min', '100000/s'], true, 'node-redis'),
  },
  {
    name: 'sluice RedisStore (fixed-window)',
    limits: 2,
    make: sluice([
      { limit: 1e6, window: 60_000, algorithm: 'fixed-window' },
      { limit: 1e5, window: 1000, algorithm: 'fixed-window' },
    ]),
  },
  { name: 'rate-limiter-flexible RateLimiterUnion of 2', limits: 2, make: rlflx([60, 1]) },
  { name: 'express-rate-limit + rate-limit-redis, 2 stacked', limits: 2, make: rateLimitRedis([60_000, 1000]) },
]

interface Sample {
  perSecond: number
  topLevel: number
  allCommands: number
  cpuUs: number
  scriptUs: number
}

async function serverCounters(admin: Redis) {
  const stats = parseCommandStats(await admin.info('commandstats'))
  const cpu = await admin.info('cpu')
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  let topLevel = 0
  let all = 0
  let scriptUs = 0
  for (const [name, { calls, usec }] of Object.entries(stats)) {
    if (name === 'info') continue
    all += calls
    if (TOP_LEVEL.has(name)) {
      topLevel += calls
      scriptUs += usec
    }
  }
  return { topLevel, all, scriptUs, cpuUs: (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6 }
}

async function measure(decide: Decide, admin: Redis, total: number, inFlight: number): Promise<Sample> {
  const before = await serverCounters(admin)
  let next = 0
  const worker = async () => {
    while (next < total) {
      const i = next++
      await decide(KEYS[(i * 7919) % KEYS.length] as string)
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: inFlight }, worker))
  const seconds = (performance.now() - start) / 1000
  const after = await serverCounters(admin)
  return {
    perSecond: total / seconds,
    topLevel: (after.topLevel - before.topLevel) / total,
    allCommands: (after.all - before.all - 1) / total, // the second INFO cpu call
    cpuUs: (after.cpuUs - before.cpuUs) / total,
    scriptUs: (after.scriptUs - before.scriptUs) / total,
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

const server = await startRedisServer()
const nodeRedis = await createClient({ socket: { host: '127.0.0.1', port: server.port } }).connect()
const clients: Clients = { ioredis: new Redis(server.port), iovalkey: new Valkey(server.port), 'node-redis': nodeRedis }
const admin = new Redis(server.port)
type Row = { name: string; limits: number; seq: Sample; conc: Sample }
const rows: Row[] = []
/** Each contender's µs per decision with one in flight, one sample per block. */
const latency = contenders.map(() => [] as number[])
/** Each contender's totals over its latency blocks: script µs in Redis and this process's CPU µs. */
const lone = contenders.map(() => ({ scriptUs: 0, cpuUs: 0, decisions: 0 }))
try {
  // Each round visits every contender, so a load spike on this shared machine lands on all of
  // them rather than on one contender's three rounds.
  const runs = contenders.map(() => [] as { seq: Sample; conc: Sample }[])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, contender] of contenders.entries()) {
      await admin.flushall()
      const decide = await contender.make(clients)
      await measure(decide, admin, 1000, IN_FLIGHT) // warm-up: scripts loaded, JIT warm
      runs[i]?.push({
        seq: await measure(decide, admin, SEQUENTIAL, 1),
        conc: await measure(decide, admin, CONCURRENT, IN_FLIGHT),
      })
    }
    process.stderr.write(`round ${round + 1} of ${ROUNDS} done\n`)
  }
  for (const [i, contender] of contenders.entries()) {
    const samples = runs[i] ?? []
    const pick = (mode: 'seq' | 'conc'): Sample => ({
      perSecond: median(samples.map((r) => r[mode].perSecond)),
      topLevel: median(samples.map((r) => r[mode].topLevel)),
      allCommands: median(samples.map((r) => r[mode].allCommands)),
      cpuUs: median(samples.map((r) => r[mode].cpuUs)),
      scriptUs: median(samples.map((r) => r[mode].scriptUs)),
    })
    rows.push({ name: contender.name, limits: contender.limits, seq: pick('seq'), conc: pick('conc') })
  }

  await admin.flushall()
  const decides = await Promise.all(contenders.map((contender) => contender.make(clients)))
  for (const decide of decides) await measure(decide, admin, 500, 1)
  let k = 0
  for (let block = 0; block < LATENCY_BLOCKS; block++) {
    for (const [i, decide] of decides.entries()) {
      const before = await serverCounters(admin)
      const cpu = process.cpuUsage()
      const start = performance.now()
      for (let j = 0; j < LATENCY_BLOCK; j++) await decide(KEYS[(k++ * 7919) % KEYS.length] as string)
      latency[i]?.push(((performance.now() - start) * 1000) / LATENCY_BLOCK)
      const { user, system } = process.cpuUsage(cpu)
      const after = await serverCounters(admin)
      const totals = lone[i] as (typeof lone)[number]
      totals.scriptUs += after.scriptUs - before.scriptUs
      totals.cpuUs += user + system
      totals.decisions += LATENCY_BLOCK
    }
  }
} finally {
  clients.ioredis.disconnect()
  clients.iovalkey.disconnect()
  nodeRedis.destroy()
  admin.disconnect()
  await server.stop()
}

const version = (await import('ioredis/package.json', { with: { type: 'json' } })).default.version
const versionOf = async (name: string) =>
  (await import(`${name}/package.json`, { with: { type: 'json' } })).default.version as string
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
console.log(
  `Node ${process.version}, ioredis ${version}, iovalkey ${await versionOf('iovalkey')}, redis ${await versionOf('redis')}, ${ROUNDS} rounds (median), 10 000 keys,`,
)
console.log(`${SEQUENTIAL} decisions with 1 in flight, ${CONCURRENT} with ${IN_FLIGHT} in flight, one connection.\n`)
console.log(
  '| store | limits | decisions/s, 1 in flight | decisions/s, 64 in flight | round trips / decision | Redis commands / decision (incl. in-script) | server CPU µs / decision (64 in flight) | script µs / decision |',
)
console.log('|---|---|---|---|---|---|---|---|')
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.limits} | ${fmt(r.seq.perSecond)} | ${fmt(r.conc.perSecond)} | ${fmt(r.conc.topLevel, 2)} | ${fmt(r.conc.allCommands, 2)} | ${fmt(r.conc.cpuUs, 1)} | ${fmt(r.conc.scriptUs, 1)} |`,
  )
}
console.log('\nRatios, sluice (sliding-window, the default) against rate-limiter-flexible:')
const SLIDING = 'sluice RedisStore (sliding-window)'
for (const limits of [1, 2]) {
  const theirs = rows.find((r) => r.limits === limits && r.name.startsWith('rate-limiter-flexible'))
  for (const name of [SLIDING, `${SLIDING}, coalesce: false`, `${SLIDING}, iovalkey`, `${SLIDING}, node-redis`]) {
    const ours = rows.find((r) => r.limits === limits && r.name === name)
    if (!ours || !theirs) continue
    console.log(
      `- ${limits} limit${limits > 1 ? 's' : ''}${name.slice(SLIDING.length)}: throughput ×${fmt(ours.seq.perSecond / theirs.seq.perSecond, 2)} (1 in flight), ×${fmt(ours.conc.perSecond / theirs.conc.perSecond, 2)} (64 in flight); server CPU per decision ×${fmt(ours.conc.cpuUs / theirs.conc.cpuUs, 2)}, script µs per decision ×${fmt(ours.conc.scriptUs / theirs.conc.scriptUs, 2)}`,
    )
  }
}

console.log(
  `\nOne decision in flight, contenders interleaved in ${LATENCY_BLOCKS} blocks of ${LATENCY_BLOCK}: median µs per decision (a round trip each; coalescing sends a lone decision at once); the scripts' µs in Redis (commandstats) and this process's CPU µs (user+sys, including the socket calls) per decision over all blocks.\n`,
)
console.log(
  '| store | limits | µs / decision | ÷ rate-limiter-flexible | ÷ rate-limit-redis | script µs / decision | Node CPU µs / decision |',
)
console.log('|---|---|---:|---:|---:|---:|---:|')
const latencyOf = (i: number) => median(latency[i] ?? [])
for (const [i, contender] of contenders.entries()) {
  const peer = (prefix: string) =>
    contenders.findIndex((c) => c.limits === contender.limits && c.name.startsWith(prefix))
  const own = latencyOf(i)
  const { scriptUs, cpuUs, decisions } = lone[i] as (typeof lone)[number]
  console.log(
    `| ${contender.name} | ${contender.limits} | ${fmt(own, 1)} | ${fmt(own / latencyOf(peer('rate-limiter-flexible')), 2)} | ${fmt(own / latencyOf(peer('express-rate-limit')), 2)} | ${fmt(scriptUs / decisions, 1)} | ${fmt(cpuUs / decisions, 1)} |`,
  )
}
