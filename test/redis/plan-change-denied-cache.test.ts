import { createLimiter } from '@sluice/core'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()
const T = 1_700_000_000_000

/**
 * RedisStore's denied cache (on by default, and in SyncedStore's exact path) keys a denial by the
 * set's id, which two plans of a named policy share: a denial under the old plan must not answer
 * for the new one.
 */
describe.skipIf(!redis)('the denied cache across a plan change', () => {
  let client: Redis
  beforeAll(async () => {
    client = new Redis((redis as RedisServer).url)
    await client.ping()
  })
  afterAll(async () => {
    client?.disconnect()
    await redis?.stop()
  })

  for (const algorithm of ['fixed-window', 'token-bucket', 'gcra'] as const) {
    it(`${algorithm}: RedisStore: an upgrade right after a denial reads Redis, not the old plan's denial`, async () => {
      const store = new RedisStore({ client, prefix: uniquePrefix('denied-plan'), now: () => T })
      const free = createLimiter({ limits: { name: 'plan', limit: 10, window: '1h', algorithm }, store })
      const pro = createLimiter({ limits: { name: 'plan', limit: 100, window: '1h', algorithm }, store })
      expect((await free.consume('k', { cost: 10 })).allowed).toBe(true)
      expect(await free.consume('k')).toMatchObject({ allowed: false, remaining: 0 }) // remembered
      expect(await pro.consume('k')).toMatchObject({ allowed: true, remaining: 89 })
      expect(await free.consume('k')).toMatchObject({ allowed: false, remaining: 0 })
    })
  }

  it('token-bucket: a denial on a slower plan is not remembered, since the bucket refills at the faster plan it was written under', async () => {
    let now = T
    const store = new RedisStore({ client, prefix: uniquePrefix('denied-slower-plan'), now: () => now })
    const fast = { name: 'plan', limit: 10, window: '1s', burst: 10, algorithm: 'token-bucket' } as const
    const slow = { ...fast, limit: 1 }
    expect((await createLimiter({ limits: fast, store }).consume('k', { cost: 10 })).allowed).toBe(true)
    const slowLimiter = createLimiter({ limits: slow, store })
    now = T + 80 // 0.8 of a token back at 10/s
    expect(await slowLimiter.consume('k')).toMatchObject({ allowed: false, retryAfter: 200 }) // as if at 1/s
    now = T + 100 // a whole token back at 10/s: the denial's 200 ms at 1/s must not answer
    expect(await slowLimiter.consume('k')).toMatchObject({ allowed: true, remaining: 0 })
  })

  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    it(`${algorithm}: SyncedStore without leasing: the same`, async () => {
      const store = new SyncedStore({ client, prefix: uniquePrefix('denied-plan-synced'), now: () => T, lease: false })
      const free = createLimiter({ limits: { name: 'plan', limit: 10, window: '1h', algorithm }, store })
      const pro = createLimiter({ limits: { name: 'plan', limit: 100, window: '1h', algorithm }, store })
      expect((await free.consume('k', { cost: 10 })).allowed).toBe(true)
      expect((await free.consume('k')).allowed).toBe(false)
      expect(await pro.consume('k')).toMatchObject({ allowed: true, remaining: 89 })
      await store.close()
    })
  }
})
