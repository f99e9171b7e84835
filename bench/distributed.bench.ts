/**
 * Many processes on one Redis: RedisStore vs SyncedStore vs rate-limiter-flexible's RateLimiterRedis
 * with inMemoryBlockOnConsumed (its answer to the same problem), on a private redis-server this
 * script starts (loopback, stopped by PID at the end). For N = 1, 2, 4 processes:
 *
 * - throughput: each process decides as fast as it can for `--seconds` on 1000 keys far under
 *   their limit (64 in flight for the asynchronous ones); decisions/s per process, Redis commands
 *   per decision (INFO commandstats, all calls) and server CPU µs per decision (INFO cpu).
 * - over-admission: one hot key, limit 1000 per 1 s fixed window, 2× the limit offered in total for
 *   3 s; the worst full window's admissions over the limit (windows by the local clock, which all
 *   processes share on this machine).
 *
 * Then the sections of bench/distributed/ (each its own table): cardinality; buckets (token bucket
 * and GCRA, RedisStore against SyncedStore with leasing); sharing (cool keys across processes, and
 * a key one node spent, issue 39).
 *
 *   flock /tmp/sluice-bench.lock pnpm bench:distributed [--seconds 2] [--only <section>]
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parsePolicies } from '@sluice/core'
import { Redis } from 'ioredis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { parseCommandStats, startRedisServer } from '../test/support/redis.js'
import { bucketRows } from './distributed/buckets.js'
import { cardinalityRows } from './distributed/cardinality.js'
import { sharingRows } from './distributed/sharing.js'
import { storeContender } from './distributed/store-contender.js'

type Kind = 'RedisStore' | 'SyncedStore' | 'RateLimiterRedis+inMemoryBlock'
const KINDS: Kind[] = ['RedisStore', 'SyncedStore', 'RateLimiterRedis+inMemoryBlock']
const HOT_LIMIT = 1000
/** Further tables, each from a module of bench/distributed/, run after the main one on the same server. */
const SECTIONS: Record<string, (url: string, admin: Redis, seconds: number) => Promise<string[]>> = {
  cardinality: cardinalityRows,
  buckets: bucketRows,
  sharing: sharingRows,
}

interface ChildArgs {
  url: string
  kind: Kind
  phase: 'throughput' | 'hot'
  prefix: string
  seconds: number
  processes: number
}

/** One decision: true when admitted. */
type Decide = (key: string) => boolean | Promise<boolean>

async function makeDecide(
  args: ChildArgs,
  client: Redis,
  limit: number,
): Promise<{ decide: Decide; close: () => Promise<void> }> {
  const limits = { limit, window: 1000, algorithm: 'fixed-window' as const }
  if (args.kind === 'RateLimiterRedis+inMemoryBlock') {
    const rl = new RateLimiterRedis({
      storeClient: client,
      points: limit,
      duration: 1,
      keyPrefix: args.prefix,
      inMemoryBlockOnConsumed: limit,
    })
    return {
      decide: (key) =>
        rl.consume(key).then(
          () => true,
          () => false,
        ),
      close: async () => {},
    }
  }
  return storeContender(args.kind, client, args.prefix, parsePolicies(limits))
}

async function child(args: ChildArgs): Promise<void> {
  const client = new Redis(args.url)
  const { decide, close } = await makeDecide(args, client, args.phase === 'hot' ? HOT_LIMIT : 1e9)
  process.stdout.write('ready\n')
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))
  const end = Date.now() + args.seconds * 1000
  let decisions = 0
  const windows: Record<number, number> = {}
  if (args.phase === 'throughput') {
    let i = 0
    const worker = async () => {
      while (Date.now() < end) {
        for (let batch = 0; batch < 256; batch++) {
          const answer = decide(`k${i++ % 1000}`)
          if (typeof answer !== 'boolean') await answer
          decisions++
        }
        // Synchronous answers never yield: let timers (SyncedStore's sync) and replies run.
        await new Promise((r) => setImmediate(r))
      }
    }
    await Promise.all(Array.from({ length: 64 }, worker))
  } else {
    const rate = (2 * HOT_LIMIT) / args.processes
    const started = Date.now()
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const now = Date.now()
        if (now >= end) {
          clearInterval(timer)
          resolve()
          return
        }
        for (const due = (rate * (now - started)) / 1000; decisions < due; decisions++) {
          const window = Math.floor(Date.now() / 1000)
          const count = (ok: boolean) => {
            if (ok) windows[window] = (windows[window] ?? 0) + 1
          }
          const answer = decide('hot')
          if (typeof answer === 'boolean') count(answer)
          else void answer.then(count)
        }
      }, 5)
    })
    await new Promise((r) => setTimeout(r, 300))
  }
  await close()
  process.stdout.write(`${JSON.stringify({ decisions, windows })}\n`)
  client.disconnect()
  process.exit(0)
}

function run(
  args: ChildArgs,
): Promise<{ start: () => void; done: Promise<{ decisions: number; windows: Record<number, number> }> }> {
  const proc = spawn(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', JSON.stringify(args)],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  )
  let out = ''
  return new Promise((resolveReady) => {
    const done = new Promise<{ decisions: number; windows: Record<number, number> }>((resolve) => {
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('ready\n')) {
          out = out.replace('ready\n', '')
          resolveReady({ start: () => proc.stdin.write('go\n'), done })
        }
        const line = out.split('\n').find((l) => l.startsWith('{'))
        if (line) resolve(JSON.parse(line))
      })
    })
  })
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  const seconds = argv.includes('--seconds') ? Number(argv[argv.indexOf('--seconds') + 1]) : 2
  const server = await startRedisServer()
  const admin = new Redis(server.url)
  const cpu = async () => {
    const info = await admin.info('cpu')
    const get = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0)
    return get('used_cpu_sys') + get('used_cpu_user')
  }
  /** All commands (those run inside scripts included), and script calls alone. */
  const calls = async (): Promise<[number, number]> => {
    const stats = Object.entries(parseCommandStats(await admin.info('commandstats'))).filter(
      ([name]) => name !== 'info' && name !== 'config|resetstat',
    )
    const all = stats.reduce((sum, [, s]) => sum + s.calls, 0)
    const scripts = stats
      .filter(([name]) => name === 'evalsha' || name === 'eval')
      .reduce((sum, [, s]) => sum + s.calls, 0)
    return [all, scripts]
  }
  const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined
  const rows: string[] = []
  const sections: string[][] = []
  try {
    for (const processes of only === undefined ? [1, 2, 4] : []) {
      for (const kind of KINDS) {
        const prefix = `bench:${kind}:${processes}:`
        const children = await Promise.all(
          Array.from({ length: processes }, () =>
            run({ url: server.url, kind, phase: 'throughput', prefix, seconds, processes }),
          ),
        )
        const [calls0, cpu0] = [await calls(), await cpu()]
        for (const c of children) c.start()
        const results = await Promise.all(children.map((c) => c.done))
        const [calls1, cpu1] = [await calls(), await cpu()]
        const decisions = results.reduce((s, r) => s + r.decisions, 0)
        const hot = await Promise.all(
          Array.from({ length: processes }, () =>
            run({ url: server.url, kind, phase: 'hot', prefix: `${prefix}hot:`, seconds: 3, processes }),
          ),
        )
        for (const c of hot) c.start()
        const hotResults = await Promise.all(hot.map((c) => c.done))
        const byWindow: Record<string, number> = {}
        for (const r of hotResults) for (const [w, n] of Object.entries(r.windows)) byWindow[w] = (byWindow[w] ?? 0) + n
        const starts = Object.keys(byWindow).map(Number).sort()
        // Full windows only: the first and last are partial.
        const worst = Math.max(0, ...starts.slice(1, -1).map((w) => byWindow[w] as number))
        const row = `| ${processes} | ${kind} | ${Math.round(decisions / processes / seconds).toLocaleString('en')} | ${((calls1[0] - calls0[0]) / decisions).toFixed(4)} | ${((calls1[1] - calls0[1]) / decisions).toFixed(5)} | ${(((cpu1 - cpu0) * 1e6) / decisions).toFixed(2)} | ${(((worst - HOT_LIMIT) / HOT_LIMIT) * 100).toFixed(1)} % |`
        rows.push(row)
        console.log(row)
      }
    }
    for (const [name, section] of Object.entries(SECTIONS)) {
      if (only === undefined || only === name)
        sections.push([`\n${name}:`, ...(await section(server.url, admin, seconds))])
    }
  } finally {
    admin.disconnect()
    await server.stop()
  }
  for (const lines of sections) for (const line of lines) console.log(line)
  if (rows.length === 0) return
  console.log(
    '\n| processes | store | decisions/s per process | Redis commands per decision (all) | script calls per decision | server CPU µs per decision | over-admission, hot key at 2× (worst full window) |',
  )
  console.log('| --- | --- | --- | --- | --- | --- | --- |')
  for (const row of rows) console.log(row)
}

if (process.argv[2] === '--child') await child(JSON.parse(process.argv[3] ?? '{}') as ChildArgs)
else await main()
