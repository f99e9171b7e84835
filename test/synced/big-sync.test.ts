// A sync that is slow because it is big, on a Redis that answers steadily: its calls come back one
// after another for longer than the sync timeout (SYNC_TIMEOUT_MS, 2 s). Such a sync is not a
// failure (the node does not go degraded) and is not sent again on top of itself.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { parsePolicies, type SyncEvent } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  commandsBetween,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
} from '../support/redis.js'
import { sleep, until } from '../support/wait.js'

const available = await privateRedisAvailable()

/** Keys decided at each of two steps: one sub-window each, 1000 to a sync call (about 20 KB of reply). */
const KEYS = 30_000
/** How fast Redis's replies come back through the link below: a sync of KEYS sub-windows takes seconds. */
const REPLY_BYTES_PER_SECOND = 150_000

/**
 * A TCP link to Redis, in a process of its own (a link does not wait for this test's event loop),
 * that lets Redis's replies through at ARGV[2] bytes a second, a little every 20 ms: to the client,
 * a Redis busy but healthy, whose replies keep coming, slowly. It prints the port it listens on.
 */
const SLOW_LINK = `
const net = require('node:net')
const [redisPort, bytesPerSecond] = process.argv.slice(1).map(Number)
const server = net.createServer((client) => {
  const redis = net.connect(redisPort, '127.0.0.1')
  client.pipe(redis)
  const waiting = []
  redis.on('data', (chunk) => waiting.push(chunk))
  const pace = setInterval(() => {
    let budget = bytesPerSecond / 50
    while (budget > 0 && waiting.length > 0) {
      const part = waiting[0].subarray(0, budget)
      client.write(part)
      budget -= part.length
      if (part.length === waiting[0].length) waiting.shift()
      else waiting[0] = waiting[0].subarray(part.length)
    }
  }, 20)
  const end = () => {
    clearInterval(pace)
    client.destroy()
    redis.destroy()
  }
  for (const socket of [client, redis]) {
    socket.on('close', end)
    socket.on('error', end)
  }
})
server.listen(0, '127.0.0.1', () => console.log(server.address().port))
`

async function slowLink(port: number, bytesPerSecond: number): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', SLOW_LINK, String(port), String(bytesPerSecond)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [line] = (await once(createInterface({ input: child.stdout as Readable }), 'line')) as [string]
  return { port: Number(line), child }
}

describe.skipIf(!available)('SyncedStore: a sync slow because it is big', { timeout: 120_000 }, () => {
  let server: RedisServer
  let link: Awaited<ReturnType<typeof slowLink>>
  let admin: Redis
  let client: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    link = await slowLink(server.port, REPLY_BYTES_PER_SECOND)
    admin = new Redis(server.url)
    client = new Redis(link.port, '127.0.0.1')
  }, 20_000)
  afterAll(async () => {
    for (const c of [admin, client]) c?.disconnect()
    link?.child.kill()
    await server?.stop()
  })

  it('each sub-window is sent once, the node never degrades, no sync fails, though the sync outlasts its timeout', async () => {
    const events: SyncEvent[] = []
    const store = new SyncedStore({
      client,
      prefix: 'big-sync:',
      maxKeys: 2 * KEYS,
      observe: (event) => {
        if (event.type === 'sync' && event.store === 'synced') events.push(event)
      },
    })
    // A one-second window: the second step's decisions are in a new one, and the first's sub-windows are then past.
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'fixed-window' })
    let degraded = 0
    const look = () => {
      if (store.degraded) degraded++
    }
    const watcher = setInterval(look, 10)
    const before = parseCommandStats(await admin.info('commandstats'))
    const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`)
    const durations: number[] = []
    // Started, its first heartbeats answered: none is due while the decisions below hold the event loop.
    await store.consume('warm', set, 1)
    await sleep(200)
    await store.flush()
    events.length = 0
    for (let step = 0; step < 2; step++) {
      // Nothing in flight while the decisions hold the event loop, which could not read a reply meanwhile.
      await store.flush()
      const windowEnd = Math.ceil((Date.now() + 1) / 1000) * 1000
      // All at once: the timer's next sync carries every key (one awaited at a time, a sync would go with each hot-key read).
      await Promise.all(keys.map((key) => store.consume(key, set, 1)))
      look()
      const started = performance.now()
      await store.flush()
      durations.push(performance.now() - started)
      // The next step's decisions fall in the next window.
      await until(() => Date.now() >= windowEnd, { every: 10 })
    }
    clearInterval(watcher)
    const ran = commandsBetween(before, parseCommandStats(await admin.info('commandstats')))
    const sent = events.reduce((sum, event) => sum + event.keys, 0)
    console.log(
      `flushes took ${durations.map((ms) => Math.round(ms))} ms; ${events.length} syncs sent ${sent} sub-windows; ` +
        `Redis ran ${ran.evalsha ?? 0} EVALSHA, ${ran.eval ?? 0} EVAL; degraded at ${degraded} looks`,
    )
    // The test means what it says only when a sync outlasted its timeout (SYNC_TIMEOUT_MS).
    expect(Math.max(...events.map((event) => event.durationMs))).toBeGreaterThan(2000)
    expect(events.filter((event) => event.error !== undefined)).toEqual([])
    // Before the fix 300–316 looks found it degraded; now 0 on an idle machine. A process starved
    // past the 1 s bound (a loaded CI machine) may miss reading a reply in time once or twice.
    expect(degraded).toBeLessThan(30)
    // Each key's sub-window of each step once: none sent again while the call carrying it was out.
    expect(sent).toBe(2 * KEYS)
    await store.close()
  })
  it('Redis stopped (SIGSTOP) while a big sync is answered: degraded within max(3 × interval, 1 s) of the stop, the sync failed within its timeout; back to normal after SIGCONT', async () => {
    const direct = new Redis(server.url)
    const events: SyncEvent[] = []
    const store = new SyncedStore({
      client: direct,
      prefix: 'big-sync-stopped:',
      maxKeys: 2 * KEYS,
      observe: (event) => {
        if (event.type === 'sync' && event.store === 'synced') events.push(event)
      },
    })
    const set = parsePolicies({ limit: 1000, window: 60_000, algorithm: 'fixed-window' })
    await store.flush() // started: the first heartbeats are answered
    await Promise.all(Array.from({ length: KEYS }, (_, i) => store.consume(`k${i}`, set, 1)))
    const flushed = store.flush()
    await sleep(50) // its first calls answered, more going out
    const pid = server.pid as number
    let degradedAfter = Number.NaN
    let failedAfter = Number.NaN
    process.kill(pid, 'SIGSTOP')
    const stoppedAt = performance.now()
    try {
      await until(() => store.degraded, { every: 5, what: 'the store to say it is degraded' })
      degradedAfter = performance.now() - stoppedAt
      await flushed
      failedAfter = performance.now() - stoppedAt
    } finally {
      process.kill(pid, 'SIGCONT')
    }
    console.log(
      `degraded ${Math.round(degradedAfter)} ms after SIGSTOP; the sync failed after ${Math.round(failedAfter)} ms`,
    )
    // The bounds count from the last reply: replies Redis sent just before the stop are still read
    // after it (up to 4 calls' worth); and a margin for a loaded machine's timers.
    const MARGIN_MS = 800
    expect(degradedAfter).toBeLessThanOrEqual(1000 + MARGIN_MS)
    expect(failedAfter).toBeLessThanOrEqual(2000 + MARGIN_MS)
    expect(events.at(-1)?.error).toBeDefined()
    // Redis answers again: the next sync carries what the failed one did not get acknowledged.
    await until(
      async () => {
        await store.flush()
        return !store.degraded
      },
      { what: 'the store to sync again' },
    )
    expect(events.at(-1)?.error).toBeUndefined()
    await store.close()
    direct.disconnect()
  })
})
