/**
 * Redis's own cost per decision (INFO commandstats usec of the commands a client sends, which
 * include what a script or MULTI runs inside), on a private redis-server this script starts
 * (loopback, stopped by PID at the end). Two tables, `--table` picks one (default both):
 *
 * - `article`: the seed article's before and after (shared/seeds/002) beside sluice, on one key
 *   already holding 1, 100 or 5 000 requests of its one-hour window: a sorted-set log as
 *   rolling-rate-limiter keeps it (MULTI: ZREMRANGEBYSCORE, ZADD, ZRANGE 0 -1 WITHSCORES,
 *   EXPIRE), the article's two counters (GET the previous window's, INCR this one's, PEXPIRE
 *   when it was new), rate-limiter-flexible's RateLimiterRedis (its script), and sluice's
 *   RedisStore, one decision per call, for each algorithm but the token bucket; then the same
 *   with 64 decisions in flight over 10 000 keys (sluice coalescing, as by default), with the
 *   server's CPU (INFO cpu, which includes reading and writing the sockets) beside.
 * - `batches`: the decision script by batch size. With --baseline <git revision>, that
 *   revision's script runs too, one decision per call, so a change to the script can be
 *   compared with what it replaces in the same run.
 *
 * Variants are interleaved round by round; each cell is the median of the rounds.
 *
 *   pnpm bench:redis-script [--table article|batches] [--rounds 5] [--decisions 16000] [--baseline 7e73d0a]
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type PolicyInput, parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { DECIDE_LUA } from '../packages/redis/src/lua/decide.js'
import { parseCommandStats, startRedisServer } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? undefined : args[index + 1]
}
const ROUNDS = Number(option('rounds') ?? 5)
const DECISIONS = Number(option('decisions') ?? 16_000)
const BASELINE = option('baseline')
const TABLE = option('table')
const BATCHES = [1, 4, 16, 64]
/** Calls sent before waiting for their replies, as a busy connection would. */
const PIPELINE = 8
const CODES = { 'fixed-window': 1, 'sliding-window': 2, 'sliding-log': 3, 'token-bucket': 4, gcra: 5 }
const CLIENT_KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

const SETS: Record<string, PolicyInput[]> = {
  '1 limit (sliding-window)': ['1000000/min'],
  '1 limit (fixed-window)': [{ limit: 1e6, window: 60_000, algorithm: 'fixed-window' }],
  '2 limits (sliding-window)': ['1000000/min', '100000/s'],
  '1 limit (token-bucket)': [{ limit: 1e6, window: 60_000, algorithm: 'token-bucket' }],
  '1 limit (gcra)': [{ limit: 1e6, window: 60_000, algorithm: 'gcra' }],
}

/**
 * The decision script as the given revision builds it: its packages/redis/src, unpacked under
 * this tree's packages/redis/node_modules (so that its imports of @sluice/core resolve, and no
 * tool reads it), imported, then removed.
 */
async function scriptAt(revision: string): Promise<string> {
  const modules = fileURLToPath(new URL('../packages/redis/node_modules/', import.meta.url))
  const dir = mkdtempSync(join(modules, '.baseline-'))
  try {
    execFileSync('sh', ['-c', `git archive ${revision} packages/redis/src | tar -x -C '${dir}'`])
    const module = (await import(pathToFileURL(join(dir, 'packages/redis/src/lua/decide.ts')).href)) as {
      DECIDE_LUA: string
    }
    return module.DECIDE_LUA
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The script's policy argument, as the store builds it: eight doubles per policy since calendar
 * offsets, seven since blockFor (issue 13), six for a script from before (`doubles`).
 */
function policyArgument(limits: PolicyInput[], doubles: number): { blob: Buffer; ids: string[] } {
  const { policies } = parsePolicies(limits)
  const blob = Buffer.alloc(8 * doubles * policies.length)
  let at = 0
  for (const p of policies) {
    // firstRequest 0, warmup 0, coldFactor 3: a plain policy's last three.
    const values = [
      CODES[p.algorithm],
      p.limit,
      p.window,
      p.burst,
      p.precision,
      p.maxDelay,
      p.blockFor,
      p.offset,
      0,
      0,
      3,
    ]
    for (const value of values.slice(0, doubles)) at = blob.writeDoubleLE(value, at)
  }
  return { blob, ids: policies.map((p) => p.id) }
}

/**
 * How many doubles per policy a script reads: 11 since warm-up, 9 since first-request windows, 8
 * since calendar offsets, 7 since blockFor, else 6.
 */
const doublesOf = (source: string) =>
  ([
    ['88 * i - 87', 11],
    ['72 * i - 71', 9],
    ['64 * i - 63', 8],
    ['56 * i - 55', 7],
  ].find(([offset]) => source.includes(offset as string))?.[1] as number | undefined) ?? 6

interface EvalshaBuffer {
  evalshaBuffer(sha: string, numkeys: number, ...args: (string | Buffer)[]): Promise<Buffer>
}

const server = await startRedisServer()
const client = new Redis(server.port)
const admin = new Redis(server.port)

/** Script µs per decision: `DECISIONS` decisions in calls of `batch`, PIPELINE calls at a time. */
async function measure(
  sha: string,
  doubles: number,
  limits: PolicyInput[],
  batch: number,
  prefix: string,
): Promise<number> {
  const { blob, ids } = policyArgument(limits, doubles)
  const calls = Math.round(DECISIONS / batch)
  await admin.config('RESETSTAT')
  let next = 0
  let waiting: Promise<Buffer>[] = []
  for (let call = 0; call < calls; call++) {
    const keys: string[] = []
    const argv: (string | Buffer)[] = []
    for (let d = 0; d < batch; d++) {
      const head = `${prefix}{${CLIENT_KEYS[(next++ * 7919) % CLIENT_KEYS.length]}}:b:`
      for (const id of ids) keys.push(head + id)
      argv.push(blob, '1')
    }
    waiting.push((client as unknown as EvalshaBuffer).evalshaBuffer(sha, keys.length, ...keys, ...argv))
    if (waiting.length === PIPELINE) {
      await Promise.all(waiting)
      waiting = []
    }
  }
  await Promise.all(waiting)
  const { evalsha } = parseCommandStats(await admin.info('commandstats'))
  return (evalsha?.usec ?? Number.NaN) / (calls * batch)
}

/** The batch-size table (see the header). */
async function batchesTable(): Promise<void> {
  const variants: { name: string; sha: string; doubles: number; batch: number }[] = []
  const current = (await client.script('LOAD', DECIDE_LUA)) as string
  if (BASELINE !== undefined) {
    const source = await scriptAt(BASELINE)
    const sha = (await client.script('LOAD', source)) as string
    variants.push({ name: `${BASELINE}, 1 per call`, sha, doubles: doublesOf(source), batch: 1 })
  }
  for (const batch of BATCHES) {
    variants.push({ name: `now, ${batch} per call`, sha: current, doubles: doublesOf(DECIDE_LUA), batch })
  }

  const results = new Map<string, number[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [setName, limits] of Object.entries(SETS)) {
      for (const [i, variant] of variants.entries()) {
        const cell = `${setName}|${variant.name}`
        const us = await measure(variant.sha, variant.doubles, limits, variant.batch, `s${i}:`)
        results.set(cell, [...(results.get(cell) ?? []), us])
      }
    }
    process.stderr.write(`batches: round ${round + 1} of ${ROUNDS}\n`)
  }

  console.log(`Script µs per decision (EVALSHA usec in INFO commandstats), median of ${ROUNDS} rounds,`)
  console.log(`${DECISIONS} decisions per cell over 10 000 client keys, ${PIPELINE} calls in flight.\n`)
  console.log(`| script, decisions per call | ${Object.keys(SETS).join(' | ')} |`)
  console.log(
    `|---|${Object.keys(SETS)
      .map(() => '---:')
      .join('|')}|`,
  )
  for (const variant of variants) {
    const cells = Object.keys(SETS).map((setName) => median(results.get(`${setName}|${variant.name}`) ?? []).toFixed(2))
    console.log(`| ${variant.name} | ${cells.join(' | ')} |`)
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

/** The article's window: one hour, as rolling-rate-limiter and the counters count it. */
const HOUR = 3_600_000
/** Requests already in the window of the key a decision lands on. */
const FILLS = [1, 10, 100, 5000]
/** Decisions per cell of the article table. */
const ARTICLE_DECISIONS = 1000
/** Keys per contender and fill, decided in turn: each gains ARTICLE_DECISIONS / keys requests a round. */
const KEYS_PER_FILL: Record<number, number> = { 1: 200, 10: 100, 100: 50, 5000: 10 }
const IN_FLIGHT = 64

/** One way to decide, for the article table. */
interface Contender {
  readonly name: string
  /** Puts `requests` requests into `key`'s window, as this contender would have counted them. */
  fill(key: string, requests: number): Promise<void>
  decide(key: string): Promise<unknown>
}

let member = 0
/** rolling-rate-limiter's Redis limiter: a sorted set of request times, read whole per request. */
const sortedSetLog: Contender = {
  name: 'sorted-set log (rolling-rate-limiter; the article before)',
  async fill(key, requests) {
    const now = Date.now()
    const entries: string[] = []
    for (let i = 0; i < requests; i++) entries.push(String(now - requests + i), `fill-${i}`)
    await client.zadd(key, ...entries)
  },
  async decide(key) {
    const now = Date.now()
    await client
      .multi()
      .zremrangebyscore(key, 0, String(now - HOUR))
      .zadd(key, String(now), `${now}-${member++}`)
      .zrange(key, '0', '-1', 'WITHSCORES')
      .expire(key, HOUR / 1000)
      .exec()
  },
}

/** The article's after: GET the previous window's count, INCR this one's; an expiry when it is new. */
const twoCounters: Contender = {
  name: "two counters, GET + INCR (the article's after)",
  async fill(key, requests) {
    await client.psetex(`${key}:${Math.floor(Date.now() / HOUR)}`, 2 * HOUR, requests)
  },
  async decide(key) {
    const window = Math.floor(Date.now() / HOUR)
    const current = `${key}:${window}`
    const [, count] = await Promise.all([client.get(`${key}:${window - 1}`), client.incr(current)])
    if (count === 1) await client.pexpire(current, 2 * HOUR)
  },
}

const flexible = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: HOUR / 1000, keyPrefix: 'rlf' })
const rateLimiterFlexible: Contender = {
  name: "rate-limiter-flexible's RateLimiterRedis (its script)",
  fill: async (key, requests) => void (await flexible.consume(key, requests)),
  decide: (key) => flexible.consume(key),
}

/** sluice's RedisStore, one decision per call; filled at distinct past milliseconds (a log of `requests` entries). */
function sluice(name: string, limits: PolicyInput, coalesce = false): Contender {
  const set = parsePolicies(limits)
  const store = new RedisStore({ client, prefix: 'sluice:', deniedCache: false, coalesce })
  return {
    name,
    async fill(key, requests) {
      let now = Date.now() - requests
      const filling = new RedisStore({
        client,
        prefix: 'sluice:',
        deniedCache: false,
        coalesce: false,
        now: () => now++,
      })
      for (let i = 0; i < requests; i += 500) {
        await Promise.all(Array.from({ length: Math.min(500, requests - i) }, () => filling.consume(key, set, 1)))
      }
    },
    decide: async (key) => store.consume(key, set, 1),
  }
}

const SLUICE: Contender[] = [
  sluice('sluice sliding window (default, 10 sub-windows)', { limit: 1e6, window: HOUR }),
  sluice('sluice fixed window', { limit: 1e6, window: HOUR, algorithm: 'fixed-window' }),
  sluice('sluice GCRA', { limit: 1e6, window: HOUR, algorithm: 'gcra' }),
  sluice('sluice sliding log', { limit: 10_000, window: HOUR, algorithm: 'sliding-log' }),
]
const ARTICLE: Contender[] = [sortedSetLog, twoCounters, rateLimiterFlexible, ...SLUICE]
/** With many decisions in flight: the store as configured by default, coalescing them too. */
const BUSY: Contender[] = [
  ...ARTICLE,
  sluice('sluice sliding window, coalescing (the default)', { limit: 1e6, window: HOUR }, true),
]
/** What each contender's client sends (commands run inside a script or MULTI count inside these). */
const TOP_LEVEL = ['evalsha', 'eval', 'multi', 'exec', 'get', 'incr', 'pexpire', 'psetex', 'zadd']

/** Server-side µs per decision: commandstats usec of the client's commands, and INFO cpu. */
async function serverCost(run: () => Promise<void>, decisions: number): Promise<{ us: number; cpuUs: number }> {
  const cpu = async () => {
    const info = await admin.info('cpu')
    const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0)
    return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6
  }
  await admin.config('RESETSTAT')
  const before = await cpu()
  await run()
  const cpuUs = (await cpu()) - before
  const stats = parseCommandStats(await admin.info('commandstats'))
  const us = TOP_LEVEL.reduce((sum, name) => sum + (stats[name]?.usec ?? 0), 0)
  return { us: us / decisions, cpuUs: cpuUs / decisions }
}

/** The article table (see the header). */
async function articleTable(): Promise<void> {
  // Keys filled once; each round adds ARTICLE_DECISIONS / KEYS_PER_FILL[fill] requests to each.
  const keyOf = (c: number, fill: number, k: number) => `article:${c}:${fill}:${k}`
  for (const [c, contender] of ARTICLE.entries()) {
    for (const fill of FILLS) {
      for (let k = 0; k < (KEYS_PER_FILL[fill] as number); k++) await contender.fill(keyOf(c, fill, k), fill)
    }
  }
  const lone = new Map<string, number[]>()
  const busy = new Map<string, { us: number; cpuUs: number }[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [c, contender] of ARTICLE.entries()) {
      for (const fill of FILLS) {
        const keys = KEYS_PER_FILL[fill] as number
        await contender.decide(keyOf(c, fill, 0)) // its script loaded
        const { us } = await serverCost(async () => {
          for (let i = 0; i < ARTICLE_DECISIONS; i++) await contender.decide(keyOf(c, fill, i % keys))
        }, ARTICLE_DECISIONS)
        lone.set(`${c}|${fill}`, [...(lone.get(`${c}|${fill}`) ?? []), us])
      }
    }
    for (const [c, contender] of BUSY.entries()) {
      // 64 in flight over 10 000 keys, each with a request or more in its window after the first round.
      let next = 0
      const total = ARTICLE_DECISIONS * 10
      const cost = await serverCost(async () => {
        const worker = async () => {
          while (next < total) await contender.decide(`busy:${c}:${CLIENT_KEYS[(next++ * 7919) % CLIENT_KEYS.length]}`)
        }
        await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
      }, total)
      busy.set(`${c}`, [...(busy.get(`${c}`) ?? []), cost])
    }
    process.stderr.write(`article: round ${round + 1} of ${ROUNDS}\n`)
  }

  const counters = ARTICLE.indexOf(twoCounters)
  const loneAt = (c: number, fill: number) => median(lone.get(`${c}|${fill}`) ?? [])
  const growth = FILLS.map((f) => `${f}: +${ARTICLE_DECISIONS / (KEYS_PER_FILL[f] as number)}`).join(', ')
  console.log(`Redis µs per decision (commandstats usec of what the client sends, including what runs inside a`)
  console.log(`script or MULTI), one decision at a time on keys already holding 1, 10, 100 or 5 000 requests of`)
  console.log(
    `their one-hour window (each round adds to each key: ${growth}); ${ARTICLE_DECISIONS} decisions per cell,`,
  )
  console.log(`median of ${ROUNDS} rounds; ×: against the article's two counters.\n`)
  console.log(`| contender | ${FILLS.map((f) => `${f.toLocaleString('en-US')} in window`).join(' | ')} |`)
  console.log(`|---|${FILLS.map(() => '---:').join('|')}|`)
  for (const [c, contender] of ARTICLE.entries()) {
    const cells = FILLS.map((f) => `${loneAt(c, f).toFixed(2)} (×${(loneAt(c, f) / loneAt(counters, f)).toFixed(1)})`)
    console.log(`| ${contender.name} | ${cells.join(' | ')} |`)
  }
  const busyAt = (c: number) => {
    const samples = busy.get(`${c}`) ?? []
    return { us: median(samples.map((s) => s.us)), cpuUs: median(samples.map((s) => s.cpuUs)) }
  }
  console.log(
    `\n${IN_FLIGHT} decisions in flight on one connection over 10 000 keys, ${ARTICLE_DECISIONS * 10} decisions,`,
  )
  console.log(
    `median of ${ROUNDS} rounds: commandstats µs and server CPU µs (INFO cpu: includes the sockets) per decision.\n`,
  )
  console.log('| contender | Redis µs / decision | × counters | server CPU µs / decision | × counters |')
  console.log('|---|---:|---:|---:|---:|')
  const floor = busyAt(counters)
  for (const [c, contender] of BUSY.entries()) {
    const { us, cpuUs } = busyAt(c)
    console.log(
      `| ${contender.name} | ${us.toFixed(2)} | ×${(us / floor.us).toFixed(2)} | ${cpuUs.toFixed(2)} | ×${(cpuUs / floor.cpuUs).toFixed(2)} |`,
    )
  }
}

try {
  if (TABLE === undefined || TABLE === 'article') await articleTable()
  if (TABLE === undefined) console.log('')
  if (TABLE === undefined || TABLE === 'batches') await batchesTable()
} finally {
  client.disconnect()
  admin.disconnect()
  await server.stop()
}
