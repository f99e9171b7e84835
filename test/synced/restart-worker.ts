/**
 * One start of a process for the restart test: a SyncedStore under the `nodeId` given (as an app
 * would pass `os.hostname()`), `count` requests on one key `gap` ms apart (traffic, not one burst:
 * syncs run between them), then close() (which sends what is pending) and exit. Args: one JSON
 * object { url, prefix, nodeId, limit, window, count, gap }. Prints `{"admitted":…,"nodeId":…}`.
 */
import { createLimiter } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'

const plan = JSON.parse(process.argv[2] ?? '{}') as {
  url: string
  prefix: string
  nodeId: string
  limit: number
  window: number
  count: number
  gap: number
}
const client = new Redis(plan.url)
await client.ping()
const store = new SyncedStore({ client, prefix: plan.prefix, nodeId: plan.nodeId, interval: 50 })
const limiter = createLimiter({
  limits: { limit: plan.limit, window: plan.window, algorithm: 'fixed-window' },
  store,
})
let admitted = 0
for (let i = 0; i < plan.count; i++) {
  if ((await limiter.consume('hot')).allowed) admitted++
  // After the first request a sync hears the key's count in Redis (a node that has not heard of a
  // key yet decides it locally up to exactAbove of its share): the rest are decided on that count
  // however late this machine's timers run.
  if (i === 0) await store.flush()
  await new Promise((resolve) => setTimeout(resolve, plan.gap))
}
await store.close()
process.stdout.write(`${JSON.stringify({ admitted, nodeId: store.nodeId })}\n`)
client.disconnect()
