// close() while Redis does not answer (SIGSTOP on a private redis-server: connected, silent) or
// is gone (killed, default client with its offline queue): every close resolves within the
// store's timeout (SYNC_TIMEOUT_MS, 2 s) and says what did not reach Redis.
import { ActiveClients, createLimiter } from '@sluice/core'
import { FleetSize, RedisActiveClientsSync, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'

const available = await privateRedisAvailable()
/** The store's timeout (SYNC_TIMEOUT_MS) and a margin for a loaded machine's timers. */
const PROMPT_MS = 2000 + 1000

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  const value = await work()
  return { value, ms: performance.now() - started }
}

describe.skipIf(!available)('close() whatever Redis does', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let server: RedisServer
  const clients: Redis[] = []
  beforeAll(async () => {
    watch()
    server = await startRedisServer()
  }, 20_000)
  afterAll(async () => {
    if (server?.pid !== undefined) process.kill(server.pid, 'SIGCONT')
    for (const client of clients) client.disconnect()
    await server?.stop()
    unwatch()
    expect(unhandled).toEqual([])
  })

  const connect = async () => {
    const client = new Redis(server.port, '127.0.0.1', { lazyConnect: true })
    clients.push(client)
    await client.connect()
    return client
  }
  const stalled = async <T>(during: () => Promise<T>): Promise<T> => {
    process.kill(server.pid as number, 'SIGSTOP')
    try {
      return await during()
    } finally {
      process.kill(server.pid as number, 'SIGCONT')
    }
  }

  it('with Redis healthy, SyncedStore.close sends everything and says so', async () => {
    const store = new SyncedStore({ client: await connect(), prefix: 'close-ok:', interval: 50 })
    const windows = createLimiter({ limits: '100/min', store })
    const bucket = createLimiter({ limits: { limit: 100, window: '1m', algorithm: 'token-bucket' }, store })
    for (let i = 0; i < 5; i++) {
      await windows.consume(`w${i}`)
      await bucket.consume(`b${i}`)
    }
    expect(await store.close()).toEqual({ complete: true, unsentKeys: 0, unreturnedLeases: 0, left: true })
  })

  it('Redis stopped (SIGSTOP): SyncedStore.close resolves within its timeout, naming the keys it could not send', async () => {
    const store = new SyncedStore({ client: await connect(), prefix: 'close-stop:', interval: 50 })
    const windows = createLimiter({ limits: '100/min', store })
    const bucket = createLimiter({ limits: { limit: 100, window: '1m', algorithm: 'token-bucket' }, store })
    await bucket.consume('b')
    await store.flush()
    const closed = await stalled(async () => {
      for (let i = 0; i < 3; i++) await windows.consume(`w${i}`)
      return timed(() => store.close())
    })
    expect(closed.ms).toBeLessThan(PROMPT_MS)
    expect(closed.value).toEqual({ complete: false, unsentKeys: 3, unreturnedLeases: 1, left: false })
  })

  it('Redis stopped (SIGSTOP): FleetSize.close resolves within the timeout and says it could not leave', async () => {
    const fleet = new FleetSize({ client: await connect(), prefix: 'close-fleet:' })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const closed = await stalled(() => timed(() => fleet.close()))
    expect(closed.ms).toBeLessThan(PROMPT_MS)
    expect(closed.value).toEqual({ complete: false, unsentKeys: 0, unreturnedLeases: 0, left: false })
  })

  it('Redis stopped (SIGSTOP) during a sync: RedisActiveClientsSync.close resolves within its timeout', async () => {
    const clients = new ActiveClients({ capacity: 100 })
    const sync = new RedisActiveClientsSync({ client: await connect(), interval: 50, timeout: 1000 })
    sync.attach(clients)
    clients.add('x')
    await sync.syncNow()
    const closed = await stalled(async () => {
      clients.add('y')
      void sync.syncNow() // in flight when close is called: it would wait its timeout, then another
      return timed(() => sync.close())
    })
    expect(closed.ms).toBeLessThan(1000 + 500)
  })

  it('Redis healthy: FleetSize.close leaves the set and says so', async () => {
    const fleet = new FleetSize({ client: await connect(), prefix: 'close-fleet-ok:' })
    expect(await fleet.close()).toEqual({ complete: true, unsentKeys: 0, unreturnedLeases: 0, left: true })
  })

  it('Redis unreachable on a client with its offline queue: FleetSize.close and SyncedStore.close resolve within the timeout', async () => {
    const client = new Redis(1, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 })
    clients.push(client)
    client.on('error', () => undefined)
    client.connect().catch(() => undefined)
    const fleet = new FleetSize({ client, prefix: 'close-gone:' })
    const store = new SyncedStore({ client, prefix: 'close-gone:', interval: 50 })
    createLimiter({ limits: '10/min', store }).consume('k')
    const closed = await timed(() => Promise.all([fleet.close(), store.close()]))
    expect(closed.ms).toBeLessThan(PROMPT_MS)
    expect(closed.value.map((report) => report.complete)).toEqual([false, false])
    expect(closed.value[1]?.unsentKeys).toBe(1)
  })
})
