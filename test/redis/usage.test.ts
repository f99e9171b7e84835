import { createLimiter } from '@sluice/core'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()
const T = Date.parse('2026-11-30T23:00:00Z')

/** Issue 40, item 7: `limiter.usage` reads the counts Redis holds, over-spend included. */
describe.skipIf(!redis)('limiter.usage on Redis', () => {
  let client: Redis
  beforeAll(async () => {
    client = new Redis((redis as RedisServer).url)
    await client.ping()
  })
  afterAll(async () => {
    client?.disconnect()
    await redis?.stop()
  })

  const stores = {
    RedisStore: (prefix: string) => new RedisStore({ client, prefix, now: () => T }),
    SyncedStore: (prefix: string) => new SyncedStore({ client, prefix, now: () => T, lease: false }),
  }

  it('RedisStore: a monthly quota used beyond its limit after an over-spent settle, read by another store on the same prefix', async () => {
    const prefix = uniquePrefix('usage-redis')
    const limits = [
      { limit: 1000, period: 'month', name: 'tokens' },
      { limit: 20, window: '1m', name: 'requests' },
    ] as const
    const limiter = createLimiter({ limits, store: stores.RedisStore(prefix) })
    const admittedAt = limiter.clock()
    expect((await limiter.consume('k', { cost: 15 })).allowed).toBe(true)
    await limiter.settle('k', { reserved: 15, actual: 1200, admittedAt })
    expect(await limiter.usage('k')).toEqual([
      { name: 'tokens', limit: 1000, used: 1200, remaining: 0, resetAfter: 3_600_000 },
      { name: 'requests', limit: 20, used: 1200, remaining: 0, resetAfter: expect.any(Number) },
    ])
    const other = createLimiter({ limits, store: stores.RedisStore(prefix) })
    expect((await other.usage('k'))[0]).toMatchObject({ used: 1200 })
  })

  it("SyncedStore: the fleet's count of the month, as this node knows it after a sync", async () => {
    const prefix = uniquePrefix('usage-synced')
    const limits = { limit: 1000, period: 'month', name: 'tokens' } as const
    const [a, b] = [stores.SyncedStore(prefix), stores.SyncedStore(prefix)]
    try {
      await createLimiter({ limits, store: a }).consume('k', { cost: 40 })
      const onB = createLimiter({ limits, store: b })
      await onB.consume('k', { cost: 2 })
      await a.flush()
      await b.flush()
      expect(await onB.usage('k')).toEqual([
        { name: 'tokens', limit: 1000, used: 42, remaining: 958, resetAfter: 3_600_000 },
      ])
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })
})
