import { createLimiter, type Decision, type LimiterOptions, MemoryStore } from '@sluice/core'
import { type RedisClient, RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type Settings, type TestClient } from '../support/clients.js'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'
import { until } from '../support/wait.js'

const TIMEOUT = 150
/** Scheduling slack on a busy 2-core machine; a hang would be seconds. */
const SLACK = 150

async function timed(decide: () => Promise<Decision>): Promise<Decision & { took: number }> {
  const start = performance.now()
  const decision = await decide()
  return { ...decision, took: performance.now() - start }
}

const privateRedis = await privateRedisAvailable()

describe.skipIf(!privateRedis).each(CLIENTS)('failure: Redis stopped, stalled, restarted: $name', (kind) => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let server: RedisServer
  const clients: TestClient[] = []
  let admin: Redis | undefined

  /** A client of the store with the package README's settings for its library, or the library's defaults. */
  const connect = async (settings: Settings) => {
    const connected = await kind.single(server.port, settings)
    clients.push(connected)
    return connected.client
  }
  const limiter = (client: RedisClient, onStoreError: LimiterOptions['onStoreError']) =>
    createLimiter({
      limits: [{ limit: 5, window: 60_000, algorithm: 'fixed-window' }],
      store: new RedisStore({ client, prefix: 'fail:', deniedCache: false }),
      onStoreError,
      timeout: TIMEOUT,
      // The default breaker with a short cooldown: the store is probed again sooner after a restart.
      breaker: { failures: 5, cooldown: '1s' },
    })

  beforeAll(async () => {
    watch()
    server = await startRedisServer()
  })
  afterAll(async () => {
    for (const connected of clients) connected.close()
    admin?.disconnect()
    await server.stop()
    unwatch()
    expect(unhandled).toEqual([])
  })

  it.each<[Settings, string]>([
    ['recommended', 'the README'],
    ['default', 'the library'],
  ])('stopped, then restarted empty: %s client settings (%s)', async (settings) => {
    const client = await connect(settings)
    const deny = limiter(client, 'deny')
    const fallback = limiter(client, new MemoryStore())
    expect((await deny.consume('a')).source).toBe('store')

    await server.stop()
    for (let i = 0; i < 3; i++) {
      const d = await timed(() => deny.consume('a'))
      expect(d.took).toBeLessThan(TIMEOUT + SLACK)
      expect(d).toMatchObject({ allowed: false, source: 'error' })
    }
    // Asked together (one coalesced call after the first): each caller gets its own answer.
    const together = await Promise.all(Array.from({ length: 10 }, (_, i) => timed(() => deny.consume(`t${i}`))))
    for (const d of together) {
      expect(d.took).toBeLessThan(TIMEOUT + SLACK)
      expect(d).toMatchObject({ allowed: false, source: 'error' })
    }
    // The fallback store enforces the same policy meanwhile: 5 admitted, then denied.
    const local = await Promise.all(Array.from({ length: 7 }, () => timed(() => fallback.consume('b'))))
    expect(local.map((d) => d.source)).toEqual(Array(7).fill('fallback'))
    expect(local.filter((d) => d.allowed)).toHaveLength(5)
    for (const d of local) expect(d.took).toBeLessThan(TIMEOUT + SLACK)

    // Same port, empty data and script cache: the store resumes by itself and EVALs the script.
    server = await startRedisServer({ port: server.port })
    await until(async () => (await deny.consume('probe')).source === 'store')
    const after = await Promise.all(Array.from({ length: 7 }, () => deny.consume(`fresh-${settings}`)))
    expect(after.map((d) => d.source)).toEqual(Array(7).fill('store'))
    expect(after.filter((d) => d.allowed)).toHaveLength(5)
  })

  it('stalled (DEBUG SLEEP): answers within the timeout, then resumes', async () => {
    const client = await connect('recommended')
    admin = new Redis(server.port)
    await admin.ping()
    const allow = limiter(client, 'allow')
    const fallback = limiter(client, new MemoryStore())
    expect((await allow.consume('s')).source).toBe('store')

    const sleeping = admin.call('DEBUG', 'SLEEP', '1.5')
    await new Promise((r) => setTimeout(r, 20))
    // The first call goes alone; the others wait in one coalesced call per store.
    const during = await Promise.all([
      timed(() => allow.consume('s')),
      timed(() => fallback.consume('s')),
      timed(() => allow.peek('s')),
      timed(() => allow.consume('t')),
      timed(() => fallback.consume('t')),
    ])
    expect(during.map((d) => [d.source, d.allowed])).toEqual([
      ['error', true],
      ['fallback', true],
      ['error', true],
      ['error', true],
      ['fallback', true],
    ])
    for (const d of during) expect(d.took).toBeLessThan(TIMEOUT + SLACK)
    await sleeping
    const back = await timed(() => allow.consume('s'))
    expect(back.source).toBe('store')
    expect(back.took).toBeLessThan(TIMEOUT)
  })
})
