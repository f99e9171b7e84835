/**
 * Heap bytes per key: how much the heap grows (after full garbage collections) when a store
 * holds N keys, each decided once. sluice's MemoryStore (each algorithm, one policy; the default
 * sliding window also with two) beside express-rate-limit's MemoryStore and rate-limiter-flexible's
 * RateLimiterMemory, and each peer twice over (a store per limit, as their users stack two for
 * 100/min plus 10/s), beside sluice's two-policy rows. The key strings are made before the first
 * measurement, so no row pays for them (every store keeps a reference to its keys). Each row runs
 * in a fresh process.
 *
 * The "busy keys" rows decide every key nine times on a stepped clock, three each in three
 * sub-windows of the minute policy (0, 6 s, 12 s) and, 100 ms apart, in three of the 1 s policy's:
 * a key whose counts spread over several sub-windows (for the sliding log: the minute policy's log
 * holds all nine entries, the 1 s policy's up to three), where the others show a key seen once.
 * Where the clock moves on by seconds (200 ms → 6 s → 12 s) a SyncedStore row syncs first, as it
 * would have in those seconds: without it every key's sub-windows of the steps before are still
 * unsent when its next ones are made, and the store holds both at once.
 *
 * SyncedStore rows (fixed and sliding window, token bucket leased) run on a private redis-server
 * this script starts, with the default interval; what they counted is flushed to it before the
 * second measurement, so a row holds a key's state as synced, not the sync loop's lists of news
 * nor its calls in flight (a busy row's sync can outlast its timeout, and the calls it sent hold
 * every sub-window they carry until Redis answers).
 *
 *   pnpm bench:memory [--keys 100000] [--rounds 3] [--only SyncedStore]
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ALGORITHMS, type AlgorithmName, createLimiter, MemoryStore, type PolicyOptions } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit'
import { Redis } from 'ioredis'
import { RateLimiterMemory } from 'rate-limiter-flexible'
import { startRedisServer } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] as string)
}
const KEYS = Number(option('keys', '100000'))
const ROUNDS = Number(option('rounds', '3'))
/** Rows whose name contains this (all when empty). */
const ONLY = option('only', '')

const ERL = 'express-rate-limit MemoryStore'
const RLF = 'rate-limiter-flexible RateLimiterMemory'
const TWO = ', 2 stores (100/min and 10/s)'
const sluice = (algorithm: AlgorithmName, policies: 1 | 2) =>
  `sluice ${algorithm}, ${policies} ${policies === 1 ? 'policy' : 'policies'}`
const BUSY = ', busy keys'
const SYNCED = 'SyncedStore '
const synced = (algorithm: AlgorithmName, policies: 1 | 2) =>
  SYNCED + sluice(algorithm, policies).slice('sluice '.length)
const NAMES = [
  ...ALGORITHMS.map((a) => sluice(a, 1)),
  sluice('fixed-window', 2),
  sluice('sliding-window', 2),
  sluice('token-bucket', 2),
  sluice('sliding-log', 2),
  sluice('sliding-window', 1) + BUSY,
  sluice('sliding-window', 2) + BUSY,
  sluice('sliding-log', 1) + BUSY,
  sluice('sliding-log', 2) + BUSY,
  synced('fixed-window', 1),
  synced('fixed-window', 2),
  synced('sliding-window', 1),
  synced('sliding-window', 2),
  synced('sliding-window', 1) + BUSY,
  synced('sliding-window', 2) + BUSY,
  synced('token-bucket', 1),
  synced('token-bucket', 2),
  ERL,
  ERL + BUSY,
  RLF,
  ERL + TWO,
  ERL + TWO + BUSY,
  RLF + TWO,
]
/** The busy rows' clock steps (ms): every key is decided at each, all keys at one before the next. */
const BUSY_STEPS = [0, 100, 200, 6000, 6100, 6200, 12_000, 12_100, 12_200]

/** The clock the busy rows' stores read: a minute boundary, moved through BUSY_STEPS. */
let clock = Math.ceil(Date.now() / 60_000) * 60_000

/** One contender's decide function, by name (limits high: every key is admitted). */
function contender(row: string): (key: string) => Promise<unknown> {
  const busy = row.endsWith(BUSY)
  const name = busy ? row.slice(0, -BUSY.length) : row
  if (name === ERL + TWO) {
    const minute = new ErlMemoryStore()
    minute.init({ windowMs: 60_000 } as never)
    const second = new ErlMemoryStore()
    second.init({ windowMs: 1_000 } as never)
    return async (key) => [await minute.increment(key), await second.increment(key)]
  }
  if (name === RLF + TWO) {
    const minute = new RateLimiterMemory({ points: 100, duration: 60 })
    const second = new RateLimiterMemory({ points: 10, duration: 1 })
    return async (key) => [await minute.consume(key), await second.consume(key)]
  }
  if (name === ERL) {
    const store = new ErlMemoryStore()
    store.init({ windowMs: 60_000 } as never)
    return (key) => store.increment(key)
  }
  if (name === RLF) {
    const limiter = new RateLimiterMemory({ points: 100, duration: 60 })
    return (key) => limiter.consume(key)
  }
  const isSynced = name.startsWith(SYNCED)
  const algorithm = ALGORITHMS.find((a) =>
    isSynced ? name === synced(a, 1) || name === synced(a, 2) : name === sluice(a, 1) || name === sluice(a, 2),
  ) as AlgorithmName
  const minute: PolicyOptions = { limit: 100, window: 60_000, algorithm }
  const second: PolicyOptions = { limit: 10, window: 1_000, algorithm, name: 'burst' }
  const limits = name.endsWith(', 1 policy') ? [minute] : [minute, second]
  const clockOption = busy ? { now: () => clock } : {}
  const client = isSynced ? new Redis(process.env.SLUICE_BENCH_REDIS as string) : undefined
  const store = client
    ? new SyncedStore({
        client,
        prefix: `mem${process.pid}`,
        maxKeys: 2 * KEYS,
        ...clockOption,
      })
    : new MemoryStore({ maxKeys: 2 * KEYS, ...clockOption })
  const limiter = createLimiter({ limits, store })
  // A flush stops waiting for a sync after its timeout; a PING on the same connection is answered
  // after every call sent before it, so the figure holds no call still in flight.
  flush = client
    ? async () => {
        await (store as SyncedStore).flush()
        await client.ping()
      }
    : async () => {}
  return (key) => limiter.consume(key)
}

/** Sends what a SyncedStore row counted, so the figure holds its state as synced, not the sync's own lists. */
let flush = async (): Promise<void> => {}

/**
 * Memory in use after full collections (twice: weak references and finalizers settle): the heap,
 * and the typed arrays' buffers, which live outside it (SyncedStore keeps its counts in them).
 */
function memoryUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with node --expose-gc (pnpm bench:memory does)')
  gc()
  gc()
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}

async function measureOne(name: string): Promise<void> {
  const keys = Array.from({ length: KEYS }, (_, i) => `198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  const decide = contender(name)
  // Warm the code on keys the count does not include, so compiled code is not counted as state.
  for (let i = 0; i < 1000; i++) await decide(`warm-${i}`)
  const base = clock
  const before = memoryUsed()
  let last = 0
  for (const step of name.endsWith(BUSY) ? BUSY_STEPS : [0]) {
    // Seconds pass between these steps: a SyncedStore syncs every second of them (the others' flush does nothing).
    if (step - last >= 1000) await flush()
    last = step
    clock = base + step
    for (const key of keys) await decide(key)
  }
  await flush()
  const after = memoryUsed()
  console.log((after - before) / KEYS)
  // Keep the store and keys alive until after the measurement.
  if (keys.length < 0) console.log(decide)
  process.exit(0)
}

if (args.includes('--one')) {
  await measureOne(option('one', ''))
} else {
  const script = fileURLToPath(import.meta.url)
  const samples = new Map<string, number[]>(NAMES.map((n) => [n, []]))
  const server = await startRedisServer()
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of NAMES) {
      if (!name.includes(ONLY)) continue
      const output = execFileSync(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', '--conditions=source', script, '--one', name, '--keys', String(KEYS)],
        { encoding: 'utf8', env: { ...process.env, SLUICE_BENCH_REDIS: server.url } },
      )
      process.stderr.write(`${name}: ${output.trim().split('\n').pop()}\n`)
      samples.get(name)?.push(Number(output.trim().split('\n').pop()))
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`)
  }
  await server.stop()
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const bytes = (name: string) => median(samples.get(name) as number[])
  // A peer left out by --only has no figure to divide by.
  const ratio = (own: number, peer: string) => (peer.includes(ONLY) ? `${(own / bytes(peer)).toFixed(2)}×` : '–')
  console.log(
    `node ${process.version}; heap and buffer growth for ${KEYS} keys, one decision each (busy rows: nine); ` +
      `median of ${ROUNDS} rounds\n`,
  )
  console.log('| store | bytes/key | vs express-rate-limit | vs rate-limiter-flexible |')
  console.log('|---|---:|---:|---:|')
  for (const name of NAMES) {
    if (!name.includes(ONLY)) continue
    const own = bytes(name)
    console.log(`| ${name} | ${own.toFixed(0)} | ${ratio(own, ERL)} | ${ratio(own, RLF)} |`)
  }
  console.log('\n"vs" columns: this row\'s bytes ÷ the peer\'s (below 1: this row holds less).')
  console.log('Busy keys: nine decisions per key over three sub-windows of each policy (see the top of this file).')
}
