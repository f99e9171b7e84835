// @sluice/fastify's own cases (the plugin's limit, route groups, refunds, cost) on a RedisStore
// and on a SyncedStore; two apps on one RedisStore count as two processes would.
import type { Store } from '@sluice/core/store'
import { rateLimit } from '@sluice/fastify'
import { RedisStore, SyncedStore } from '@sluice/redis'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'
import { until } from '../support/wait.js'

const redis = await findRedis()
/** A whole minute: every fixed window of the cases below starts on it. */
const T0 = 1_800_000_000_000
const now = () => T0
const fixed = (limit: number) => ({ limit, window: '1h', algorithm: 'fixed-window' as const })

describe.skipIf(redis === undefined)('@sluice/fastify on Redis', () => {
  const client = new Redis(redis?.url ?? '')
  const synced: SyncedStore[] = []
  afterAll(async () => {
    for (const store of synced) await store.close()
    client.disconnect()
    await redis?.stop()
  })

  const stores: [string, () => Store][] = [
    ['RedisStore', () => new RedisStore({ client, prefix: uniquePrefix('fastify'), now })],
    [
      'SyncedStore',
      () => {
        const store = new SyncedStore({ client, prefix: uniquePrefix('fastify-synced'), interval: '1h', now })
        synced.push(store)
        return store
      },
    ],
  ]

  describe.each(stores)('%s', (_, makeStore) => {
    it("limits every route, a group of routes by namespace, and a route's cost", async () => {
      const app = Fastify()
      await app.register(rateLimit, { limits: fixed(3), store: makeStore(), headers: 'legacy' })
      app.get('/', async () => 'ok')
      const auth = { rateLimit: { limits: fixed(2), namespace: 'auth' } }
      app.post('/login', { config: auth }, async () => 'in')
      app.post('/reset', { config: auth }, async () => 'reset')
      app.get('/export', { config: { rateLimit: { limits: fixed(10), cost: 4 } } }, async () => 'csv')
      const statusOf = async (method: 'GET' | 'POST', url: string) => (await app.inject({ method, url })).statusCode

      const first = await app.inject('/')
      expect(first.headers['x-ratelimit-remaining']).toBe('2')
      expect([await statusOf('GET', '/'), await statusOf('GET', '/'), await statusOf('GET', '/')]).toEqual([
        200, 200, 429,
      ])
      expect([await statusOf('POST', '/login'), await statusOf('POST', '/reset')]).toEqual([200, 200])
      expect([await statusOf('POST', '/login'), await statusOf('POST', '/reset')]).toEqual([429, 429])
      expect([
        await statusOf('GET', '/export'),
        await statusOf('GET', '/export'),
        await statusOf('GET', '/export'),
      ]).toEqual([200, 200, 429])
      await app.close()
    })

    it('skipFailedRequests gives back what a failed route took', async () => {
      const app = Fastify()
      await app.register(rateLimit, { limits: fixed(2), store: makeStore(), skipFailedRequests: true })
      app.get('/fails', async (_request, reply) => reply.code(500).send({ failed: true }))
      app.get('/', async (request) => ({ remaining: request.rateLimit?.remaining }))
      for (let i = 0; i < 3; i++) expect((await app.inject('/fails')).statusCode).toBe(500)
      // Three failures given back: the first success leaves one.
      await until(async () => (await app.inject('/')).json<{ remaining: number }>().remaining, { done: (r) => r === 1 })
      await app.close()
    })
  })

  it('two apps on one RedisStore prefix share the limit, as two processes do', async () => {
    const prefix = uniquePrefix('fastify-two')
    const apps = await Promise.all(
      [0, 1].map(async () => {
        const app = Fastify()
        await app.register(rateLimit, { limits: fixed(3), store: new RedisStore({ client, prefix, now }) })
        app.get('/', async () => 'ok')
        return app
      }),
    )
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await (apps[i % 2] as (typeof apps)[number]).inject('/')).statusCode)
    expect(statuses).toEqual([200, 200, 200, 429])
    for (const app of apps) await app.close()
  })
})
