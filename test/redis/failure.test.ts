import { createLimiter, type Decision, type LimiterOptions, MemoryStore } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'

const TIMEOUT = 150
/** Scheduling slack on a busy 2-core machine; a hang would be seconds. */
const SLACK = 150

/** The settings the package README recommends, with a fast reconnect for the test. */
const RECOMMENDED: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
  retryStrategy: () => 50,
}

async function timed(decide: () => Promise<Decision>): Promise<Decision & { took: number }> {
  const start = performance.now()
  const decision = await decide()
  return { ...decision, took: performance.now() - start }
}

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe.skipIf(!(await privateRedisAvailable()))('failure: Redis stopped, stalled, restarted', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let server: RedisServer
  const clients: Redis[] = []

  const connect = async (options: RedisOptions) => {
    const client = new Redis(server.port, options)
    client.on('error', () => {}) // Logged by the app in real life; the test only needs it handled.
    clients.push(client)
    // Without the offline queue a command before 'ready' fails at once; wait for the connection.
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
    return client
  }
  const limiter = (client: Redis, onStoreError: LimiterOptions['onStoreError']) =>
    createLimiter({
      limits: [{ limit: 5, window: 60_000, algorithm: 'fixed-window' }],
      store: new RedisStore({ client, prefix: 'fail:', deniedCache: false }),
      onStoreError,
      timeout: TIMEOUT,
    })

  beforeAll(async () => {
    watch()
    server = await startRedisServer()
  })
  afterAll(async () => {
    for (const client of clients) client.disconnect()
    await server.stop()
    unwatch()
    expect(unhandled).toEqual([])
  })

  it.each<[string, RedisOptions]>([
    ['recommended', RECOMMENDED],
    ['default', { retryStrategy: () => 50 }],
  ])('stopped, then restarted empty: %s client settings', async (name, options) => {
    const client = await connect(options)
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
    const after = await Promise.all(Array.from({ length: 7 }, () => deny.consume(`fresh-${name}`)))
    expect(after.map((d) => d.source)).toEqual(Array(7).fill('store'))
    expect(after.filter((d) => d.allowed)).toHaveLength(5)
  })

  it('stalled (DEBUG SLEEP): answers within the timeout, then resumes', async () => {
    const client = await connect(RECOMMENDED)
    const admin = await connect({})
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
