/**
 * The "buckets" section of `pnpm bench:distributed`: token bucket and GCRA on 1000 keys far under
 * their rate (limit 1e9 a second: every process decides as fast as it can, 64 in flight for the
 * asynchronous stores, after a warm-up second on the same keys that is not measured: the steady
 * state), per N = 1, 2, 4 processes on one private redis-server: decisions/s per
 * process and script calls per decision (INFO commandstats), RedisStore against SyncedStore with
 * leasing, and rate-limiter-flexible's RateLimiterRedis with inMemoryBlockOnConsumed (it has no
 * token bucket or GCRA: its fixed window, the peer's answer to the same load).
 *
 * Alone: flock /tmp/sluice-bench.lock pnpm bench:distributed --only buckets [--seconds 2]
 */
import { spawn } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parsePolicies } from '@sluice/core'
import { Redis } from 'ioredis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { parseCommandStats } from '../../test/support/redis.js'
import { storeContender } from './store-contender.js'

type Kind = 'RedisStore' | 'SyncedStore (leasing)' | 'RateLimiterRedis+inMemoryBlock (fixed window)'
type Algorithm = 'token-bucket' | 'gcra'
const LIMIT = 1e9
const KEYS = 1000
const WARM_UP_MS = 1000

interface ChildArgs {
  url: string
  kind: Kind
  algorithm: Algorithm
  prefix: string
  seconds: number
}

/** One decision: true when admitted. */
type Decide = (key: string) => boolean | Promise<boolean>

function makeDecide(args: ChildArgs, client: Redis): { decide: Decide; close: () => Promise<void> } {
  if (args.kind === 'RateLimiterRedis+inMemoryBlock (fixed window)') {
    const rl = new RateLimiterRedis({
      storeClient: client,
      points: LIMIT,
      duration: 1,
      keyPrefix: args.prefix,
      inMemoryBlockOnConsumed: LIMIT,
    })
    const admitted = () => true
    const denied = () => false
    return { decide: (key) => rl.consume(key).then(admitted, denied), close: async () => {} }
  }
  const set = parsePolicies({ limit: LIMIT, window: 1000, algorithm: args.algorithm })
  return storeContender(args.kind === 'RedisStore' ? 'RedisStore' : 'SyncedStore', client, args.prefix, set)
}

/** A line on stdin from the parent. */
function nextLine(): Promise<void> {
  return new Promise((resolve) => process.stdin.once('data', () => resolve()))
}

/** Decides as fast as it can for `ms` (64 in flight); how many decisions. */
async function decideFor(decide: Decide, ms: number): Promise<number> {
  const end = Date.now() + ms
  let decisions = 0
  let i = 0
  const worker = async () => {
    while (Date.now() < end) {
      for (let batch = 0; batch < 256; batch++) {
        const answer = decide(`k${i++ % KEYS}`)
        if (typeof answer !== 'boolean') await answer
        decisions++
      }
      // Synchronous answers never yield: let timers (the lease syncs) and replies run.
      await new Promise((r) => setImmediate(r))
    }
  }
  await Promise.all(Array.from({ length: 64 }, worker))
  return decisions
}

/**
 * One process: a warm-up second on the same keys (a leasing node's first takes, a cold client),
 * then, once every process is warm, the measured run.
 */
async function child(args: ChildArgs): Promise<void> {
  const client = new Redis(args.url)
  const { decide, close } = makeDecide(args, client)
  process.stdout.write('ready\n')
  await nextLine()
  await decideFor(decide, WARM_UP_MS)
  process.stdout.write('warm\n')
  await nextLine()
  const decisions = await decideFor(decide, args.seconds * 1000)
  await close()
  process.stdout.write(`${JSON.stringify({ decisions })}\n`)
  client.disconnect()
  process.exit(0)
}

/** Starts a child; resolves once it is ready, with a way to send it "go" and when it is warm and done. */
function spawnChild(
  args: ChildArgs,
): Promise<{ go: () => void; warm: Promise<void>; done: Promise<{ decisions: number }> }> {
  const self = fileURLToPath(import.meta.url)
  const proc = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', self, '--child', JSON.stringify(args)],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  )
  let out = ''
  let warmed: () => void = () => {}
  const warm = new Promise<void>((resolve) => {
    warmed = resolve
  })
  return new Promise((ready) => {
    const done = new Promise<{ decisions: number }>((resolve) => {
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('ready\n')) {
          out = out.replace('ready\n', '')
          ready({ go: () => proc.stdin.write('go\n'), warm, done })
        }
        if (out.includes('warm\n')) {
          out = out.replace('warm\n', '')
          warmed()
        }
        const line = out.split('\n').find((l) => l.startsWith('{'))
        if (line) resolve(JSON.parse(line))
      })
    })
  })
}

const BUCKETS_HEADER = [
  '| processes | algorithm | store | decisions/s per process | script calls per decision | × RedisStore |',
  '| --- | --- | --- | --- | --- | --- |',
]

/** The section's table (header first), on the server at `url` (`admin` reads its commandstats). */
export async function bucketRows(url: string, admin: Redis, seconds: number): Promise<string[]> {
  const scriptCalls = async () => {
    const stats = parseCommandStats(await admin.info('commandstats'))
    return (stats.evalsha?.calls ?? 0) + (stats.eval?.calls ?? 0)
  }
  const kinds: Kind[] = ['RedisStore', 'SyncedStore (leasing)', 'RateLimiterRedis+inMemoryBlock (fixed window)']
  const rows: string[] = [...BUCKETS_HEADER]
  for (const processes of [1, 2, 4]) {
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      let redisStoreRate = 0
      for (const kind of kinds) {
        const prefix = `bench-buckets:${kind}:${algorithm}:${processes}:`
        const children = await Promise.all(
          Array.from({ length: processes }, () => spawnChild({ url, kind, algorithm, prefix, seconds })),
        )
        for (const c of children) c.go()
        await Promise.all(children.map((c) => c.warm))
        const before = await scriptCalls()
        for (const c of children) c.go()
        const results = await Promise.all(children.map((c) => c.done))
        const calls = (await scriptCalls()) - before
        const decisions = results.reduce((sum, r) => sum + r.decisions, 0)
        const rate = decisions / processes / seconds
        if (kind === 'RedisStore') redisStoreRate = rate
        const row = `| ${processes} | ${algorithm} | ${kind} | ${Math.round(rate).toLocaleString('en')} | ${(calls / decisions).toFixed(5)} | ${(rate / redisStoreRate).toFixed(1)} |`
        rows.push(row)
        console.log(row)
      }
    }
  }
  return rows
}

// This module's own children (spawned by bucketRows); imported by distributed.bench.ts (whose
// children take `--child` too), nothing runs.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--child') {
  await child(JSON.parse(process.argv[3] ?? '{}') as ChildArgs)
}
