import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { CloseReport } from '@sluice/redis'
import type { Redis } from 'ioredis'
import { bundled } from '../support/bundle.js'
import type { Pattern, WorkerPlan } from './plan.js'

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url))

export interface WorkerResult {
  admitted: Partial<Record<Pattern, number>>
  offered: Partial<Record<Pattern, number>>
  slowest: number
  unhandled: string[]
  syncErrors: string[]
  /** Decisions that failed (StoreFullError), per pattern. */
  errors: Partial<Record<Pattern, number>>
  lastError?: string
  /** The longest time between two syncs while offering, in ms: `interval` on an idle machine. */
  maxSyncGap: number
  /** With plan.record: when each admitted hot-key request was asked (epoch ms). */
  admittedAt?: number[]
  /** What `close()` reported (unsent keys: counts that never reached Redis). */
  closed: CloseReport
}

/** Starts one worker process and resolves once it printed "ready". */
export async function startWorker(
  plan: WorkerPlan,
  onLine?: (line: string) => void,
): Promise<{ child: ChildProcess; done: Promise<WorkerResult> }> {
  const child = spawn(process.execPath, [await bundled(WORKER), JSON.stringify(plan)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  let buffer = ''
  let resolveReady: () => void
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve
  })
  const done = new Promise<WorkerResult>((resolve, reject) => {
    child.stdout?.on('data', (data: Buffer) => {
      buffer += data.toString()
      let at = buffer.indexOf('\n')
      while (at >= 0) {
        const line = buffer.slice(0, at)
        buffer = buffer.slice(at + 1)
        if (line === 'ready') resolveReady()
        else if (line.startsWith('{"admitted"')) resolve(JSON.parse(line) as WorkerResult)
        else onLine?.(line)
        at = buffer.indexOf('\n')
      }
    })
    child.on('exit', (code, signal) => reject(new Error(`worker exited (${code ?? signal}) without a result`)))
  })
  done.catch(() => {})
  return Promise.race([ready, done.then(() => undefined)]).then(() => ({ child, done }))
}

/** Runs `plans` as one process each, all started together; their results. */
export async function runFleet(plans: WorkerPlan[]): Promise<WorkerResult[]> {
  const workers = await Promise.all(plans.map((plan) => startWorker(plan)))
  for (const { child } of workers) child.stdin?.write('go\n')
  return Promise.all(workers.map((w) => w.done))
}

/**
 * One sub-window hash's fields as numbers: running totals `a:<node>`, `x:<node>`, `r:<node>` (and
 * `a<n>:<node>`… of a key a node counted again after evicting it), and `o`.
 */
export type Totals = Record<string, number>

/** Per Redis sub-window hash of the prefix: its totals (without `d`), by key and window start. */
export async function totalsInRedis(client: Redis, prefix: string): Promise<Map<string, Map<number, Totals>>> {
  const totals = new Map<string, Map<number, Totals>>()
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*:s:*`, 'COUNT', 1000)
    cursor = next
    // One round trip per SCAN page: a read key by key is slower than the hashes' expiry under load.
    const pipeline = client.pipeline()
    for (const key of keys) pipeline.hgetall(key)
    const replies = (await pipeline.exec()) ?? []
    for (const [i, key] of keys.entries()) {
      const fields = (replies[i]?.[1] ?? {}) as Record<string, string>
      const hash: Totals = {}
      for (const [name, value] of Object.entries(fields)) if (name !== 'd') hash[name] = Number(value)
      const tag = key.slice(key.indexOf('{') + 1, key.indexOf('}'))
      const byStart = totals.get(tag) ?? new Map<number, Totals>()
      totals.set(tag, byStart)
      byStart.set(Number(key.slice(key.lastIndexOf(':') + 1)), hash)
    }
  } while (cursor !== '0')
  return totals
}

/**
 * PERSISTs every key it is given that still has an expiry; replies with the least time to live any
 * of them had left (ms; -1: none had one): how close the keeping came to losing a hash.
 */
const PERSIST_ALL_LUA = `
local least = -1
for _, key in ipairs(KEYS) do
  local ttl = redis.call('PTTL', key)
  if ttl > 0 then
    redis.call('PERSIST', key)
    if least < 0 or ttl < least then least = ttl end
  end
end
return least
`
/** Keys a keeping call takes at most (one script call each). */
const KEEP_BATCH = 1000

/**
 * Runs `run` while no sub-window hash under `prefix` (of `tag` only, when given) can expire, so a
 * test reads every window the run counted in, whole, however late the run ends: Redis drops a
 * window's hash 5 s after the window ends, and a starved fleet's run, flush and close take longer.
 * Each hash is made persistent as Redis gives it its expiry (a keyspace event, so the keeping costs
 * no scan of the keyspace), never its fields changed. The hashes announced together go in one
 * script call: a PERSIST per event, one promise each, fell more than the 5 s behind on a loaded
 * machine (a fleet makes tens of thousands of hashes a run). Needs a server of the test's own,
 * database 0: it turns keyspace events on. Rejects if any such hash expired all the same (then a
 * read would miss counts).
 */
export async function keepingHashes<T>(client: Redis, prefix: string, run: () => Promise<T>, tag?: string): Promise<T> {
  const hashes = tag === undefined ? undefined : `${prefix}{${tag}}:s:`
  const isHash = (key: string) =>
    hashes === undefined ? key.startsWith(prefix) && key.includes('}:s:') : key.startsWith(hashes)
  await client.config('SET', 'notify-keyspace-events', 'Egx')
  const events = client.duplicate()
  const expired: string[] = []
  const pending = new Set<string>()
  let keeping: Promise<void> | undefined
  let kept = 0
  let closest = Number.POSITIVE_INFINITY
  const keep = async () => {
    // Events parsed from one read of the socket are emitted in one turn: wait for the rest of them.
    await Promise.resolve()
    while (pending.size > 0) {
      const batch = [...pending].slice(0, KEEP_BATCH)
      for (const key of batch) pending.delete(key)
      const least = Number(await client.eval(PERSIST_ALL_LUA, batch.length, ...batch))
      kept += batch.length
      if (least >= 0) closest = Math.min(closest, least)
    }
  }
  let failed: unknown
  const startKeeping = () => {
    keeping ??= keep()
      .catch((error: unknown) => {
        failed ??= error
      })
      .finally(() => {
        keeping = undefined
        // Announced after the loop above took its last batch.
        if (pending.size > 0 && failed === undefined) startKeeping()
      })
  }
  events.on('message', (channel: string, key: string) => {
    if (!isHash(key)) return
    if (channel.endsWith(':expired')) expired.push(key)
    else {
      pending.add(key)
      startKeeping()
    }
  })
  await events.subscribe('__keyevent@0__:expire', '__keyevent@0__:expired')
  const result = await run().finally(async () => {
    // A PING answered on this connection comes after every event Redis published before it.
    await events.ping()
    while (keeping !== undefined) await keeping
    events.disconnect()
  })
  if (failed !== undefined) throw failed
  if (kept > 0) console.log(`kept ${kept} hashes; the closest to expiring had ${closest} ms left`)
  if (expired.length > 0)
    throw new Error(`${expired.length} hashes expired before they could be kept, e.g. ${expired[0]}`)
  return result
}

/** The global count a hash's totals make: Σa + Σx − Σr − o, by the field name's first letter as the scripts sum. */
export function countOf(totals: Totals): number {
  let sum = 0
  for (const [name, value] of Object.entries(totals))
    sum += name.startsWith('a') || name.startsWith('x') ? value : -value
  return sum
}

/** Per Redis sub-window hash of the prefix: the global count, by key and window start. */
export async function countsInRedis(client: Redis, prefix: string): Promise<Map<string, Map<number, number>>> {
  const counts = new Map<string, Map<number, number>>()
  for (const [tag, byStart] of await totalsInRedis(client, prefix)) {
    counts.set(tag, new Map([...byStart].map(([start, totals]) => [start, countOf(totals)])))
  }
  return counts
}
