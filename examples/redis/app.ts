/**
 * One app process. Run several (different PORTs, same REDIS_URL) and they share one limit:
 * 10 requests a minute and 3 a second per client IP, counted in Redis.
 */
import type { AddressInfo } from 'node:net'
import { FallbackShare } from '@sluice/core'
import { rateLimit, rateLimitOf } from '@sluice/express'
import { FleetSize, RedisStore } from '@sluice/redis'
import express from 'express'
import { Redis } from 'ioredis'

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  // Fail fast while Redis is away (the limiter falls back), never replay stale commands later.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
})
redis.on('error', (error) => console.error(`[${process.pid}] redis: ${error.message}`))

// How many processes share the limits, for the fallback's share.
const fleet = new FleetSize({ client: redis, prefix: process.env.PREFIX ?? 'sluice-example:' })

const app = express()
app.get(
  '/',
  rateLimit({
    limits: ['10/min', { limit: 3, window: '1s', algorithm: 'gcra' }],
    store: new RedisStore({ client: redis, prefix: process.env.PREFIX ?? 'sluice-example:' }),
    // Redis slow or down: decide in this process, on its share of each limit, instead of failing open.
    onStoreError: new FallbackShare({ processes: () => fleet.processes }),
    timeout: 200,
  }),
  (req, res) => {
    res.json({ pid: process.pid, remaining: rateLimitOf(req)?.remaining, source: rateLimitOf(req)?.source })
  },
)

// Without the offline queue, requests before the connection is ready would use the fallback.
await new Promise((resolve) => redis.once('ready', resolve))
const port = Number(process.env.PORT ?? 3000)
const server = app.listen(port, '127.0.0.1', (error?: NodeJS.ErrnoException) => {
  if (error) failToListen(error, port)
  const bound = (server.address() as AddressInfo).port
  console.log(`[${process.pid}] listening on http://127.0.0.1:${bound}`)
})

process.on('SIGTERM', () => {
  server.close()
  // Leave the fleet at once (else the others count this process for 5 s more), then disconnect.
  void fleet.close().finally(() => redis.disconnect())
})

/** A clear message instead of a stack trace when the port is taken (or not ours to use). */
function failToListen(error: NodeJS.ErrnoException, port: number): never {
  const reason =
    error.code === 'EADDRINUSE'
      ? `port ${port} is already in use (EADDRINUSE): stop the other server, or pick another port, e.g. PORT=${port + 1} pnpm start`
      : `cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port, e.g. PORT=3001 pnpm start`
  console.error(reason)
  process.exit(1)
}
