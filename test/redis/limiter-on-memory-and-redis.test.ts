import { createLimiter } from '@sluice/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, memoryAndRedisStores, type TestClient } from '../support/clients.js'
import { findRedis } from '../support/redis.js'

const shared = await findRedis()

/** The limiter's late refunds, namespaces, blockFor, penalty and block, on memory and on real Redis alike. */
describe.skipIf(shared === undefined)('the limiter behaves alike on MemoryStore and RedisStore', () => {
  /** One client per library, so the behaviours run on each (penalize and block are EVAL, not EVALSHA). */
  const connected = new Map<string, TestClient>()
  beforeAll(async () => {
    for (const kind of CLIENTS) connected.set(kind.name, await kind.single(shared?.port ?? 0))
  })
  afterAll(async () => {
    for (const c of connected.values()) c.close()
    await shared?.stop()
  })
  const start = 1_700_000_000_000
  const prefix = `sluice-alike-${Math.random().toString(36).slice(2)}:`
  const stores = memoryAndRedisStores(connected, prefix)

  for (const [name, make] of stores) {
    it(`${name}: settle gives back an under-spend and charges an over-spend below zero`, async () => {
      let now = start
      const limiter = createLimiter({
        limits: { limit: 100, window: 100_000, algorithm: 'gcra' },
        store: make(() => now),
      })
      const key = `settle-${name}`
      await limiter.consume(key, { cost: 10 })
      expect((await limiter.settle(key, { reserved: 10, actual: 4, admittedAt: limiter.clock() })).remaining).toBe(96)
      await limiter.consume(key, { cost: 10 })
      const over = await limiter.settle(key, { reserved: 10, actual: 150 })
      expect(over).toMatchObject({ allowed: false, remaining: 0, retryAfter: 55_000 })
      now = start + 55_000
      expect((await limiter.consume(key)).allowed).toBe(true)
    })

    it(`${name}: a late refund leaves the next fixed window alone`, async () => {
      let now = start
      const limiter = createLimiter({
        limits: { limit: 2, window: 50, algorithm: 'fixed-window' },
        store: make(() => now),
      })
      const key = `late-${name}`
      await limiter.consume(key)
      const admittedAt = limiter.clock()
      now = start + 75
      await limiter.consume(key)
      await limiter.refund(key, { admittedAt })
      expect((await limiter.peek(key)).remaining).toBe(1)
    })

    it(`${name}: namespaces keep counts apart on one store`, async () => {
      const store = make(() => start)
      const login = createLimiter({ limits: '2/min', store, namespace: 'login' })
      const reset = createLimiter({ limits: '2/min', store, namespace: 'reset' })
      const key = `ns-${name}`
      await login.consume(key)
      await login.consume(key)
      expect((await login.consume(key)).allowed).toBe(false)
      expect((await reset.consume(key)).remaining).toBe(1)
    })

    it(`${name}: blockFor blocks past the window, penalty takes past the limit`, async () => {
      let now = start
      const store = make(() => now)
      const limiter = createLimiter({
        limits: { limit: 3, window: '1s', algorithm: 'fixed-window', blockFor: '10s' },
        store,
      })
      const key = `block-${name}`
      expect(await limiter.penalty(key, { cost: 3 })).toMatchObject({ remaining: 0, allowed: false })
      expect(await limiter.consume(key)).toMatchObject({ allowed: false, retryAfter: 10_000 })
      now += 2000
      expect(await limiter.consume(key)).toMatchObject({ allowed: false, retryAfter: 8000 })
      now += 8000
      expect((await limiter.consume(key)).allowed).toBe(true)
      await limiter.reset(key)
    })

    it(`${name}: block(key, duration) blocks the blockFor policies until it ends; reset lifts it`, async () => {
      let now = start
      const store = make(() => now)
      const limiter = createLimiter({
        limits: [{ limit: 5, window: '1m', blockFor: '1h', name: 'guarded' }, '100/min'],
        store,
      })
      const key = `manual-${name}`
      expect(await limiter.block(key, '15m')).toMatchObject({ allowed: false, retryAfter: 900_000 })
      now += 899_999
      expect((await limiter.consume(key)).allowed).toBe(false)
      now += 1
      expect((await limiter.consume(key)).allowed).toBe(true)
      await limiter.block(key, 1000)
      await limiter.reset(key)
      expect((await limiter.consume(key)).allowed).toBe(true)
      await expect(createLimiter({ limits: '1/s', store }).block(key, 1000)).rejects.toMatchObject({ field: 'limits' })
      await limiter.reset(key)
    })
  }
})
