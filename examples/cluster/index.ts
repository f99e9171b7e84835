/**
 * One app started as 4 processes (Node's cluster module) sharing one limit through SyncedStore:
 * each worker offers twice its fair share of a 400-per-2 s limit on one key; the primary prints
 * what each admitted, and what the fleet admitted in each 2 s window the run touched (a late start
 * can spread it over two) against the limit. Needs Redis (REDIS_URL, default 127.0.0.1:6379).
 */
import cluster from 'node:cluster'
import { createLimiter } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'

const WORKERS = 4
const LIMIT = 400
const WINDOW_MS = 2000

if (cluster.isPrimary) {
  const prefix = `sluice-example-cluster:${Date.now()}:`
  // Start in a fresh window so the whole run counts against one.
  const wait = WINDOW_MS - (Date.now() % WINDOW_MS) + 50
  let reported = 0
  let total = 0
  /** Admitted by the fleet per window start (the workers share this machine's clock). */
  const byWindow = new Map<number, number>()
  for (let i = 0; i < WORKERS; i++) {
    cluster
      .fork({ PREFIX: prefix, START_AT: String(Date.now() + wait) })
      .on('message', (message: { windows: [number, number][] }) => {
        reported++
        let admitted = 0
        for (const [start, count] of message.windows) {
          byWindow.set(start, (byWindow.get(start) ?? 0) + count)
          admitted += count
        }
        total += admitted
        console.log(`worker ${reported}: admitted ${admitted}`)
        if (reported < WORKERS) return
        console.log(`total admitted ${total} of ${2 * LIMIT} offered; limit ${LIMIT} per ${WINDOW_MS} ms`)
        for (const [start, count] of [...byWindow].sort(([a], [b]) => a - b)) {
          const over = count > LIMIT ? `${(((count - LIMIT) / LIMIT) * 100).toFixed(1)} % over` : 'within'
          console.log(`window at ${new Date(start).toISOString()}: ${count} admitted (${over} the limit)`)
        }
      })
  }
} else {
  const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  const store = new SyncedStore({ client, prefix: process.env.PREFIX, interval: '50ms' })
  const limiter = createLimiter({ limits: { limit: LIMIT, window: WINDOW_MS, algorithm: 'fixed-window' }, store })
  await new Promise((r) => setTimeout(r, Number(process.env.START_AT) - Date.now()))
  // Twice this worker's share (2 × 400 / 4 = 200 requests) over one second.
  const windows = new Map<number, number>()
  for (let i = 0; i < (2 * LIMIT) / WORKERS; i++) {
    if ((await limiter.consume('client-1')).allowed) {
      const now = Date.now()
      const start = now - (now % WINDOW_MS)
      windows.set(start, (windows.get(start) ?? 0) + 1)
    }
    await new Promise((r) => setTimeout(r, 1000 / ((2 * LIMIT) / WORKERS)))
  }
  await store.close()
  client.disconnect()
  process.send?.({ windows: [...windows] }, () => process.exit(0))
}
