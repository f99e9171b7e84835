import { ConfigError, createLimiter } from '@sluice/core'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis } from '../support/redis.js'

const shared = await findRedis()
const DAY = 86_400_000
const start = 20_000 * DAY + 1000

/** A named policy keeps its usage when its limit changes, on Redis as in memory; what Redis cannot carry it refuses. */
describe.skipIf(shared === undefined)('named policies on Redis across a plan change', () => {
  let connected: TestClient
  beforeAll(async () => {
    connected = await (CLIENTS[0] as (typeof CLIENTS)[number]).single(shared?.port ?? 0)
  })
  afterAll(async () => {
    connected.close()
    await shared?.stop()
  })
  const prefix = `sluice-plan-${Math.random().toString(36).slice(2)}:`

  for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log'] as const) {
    it(`${algorithm}: an upgrade after 100 of 100 used leaves 900, a downgrade nothing`, async () => {
      const store = new RedisStore({ client: connected.client, prefix, now: () => start, deniedCache: false })
      const free = createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm }, store })
      const pro = createLimiter({ limits: { name: 'plan', limit: 1000, window: '1d', algorithm }, store })
      const key = `up-${algorithm}`
      expect((await free.consume(key, { cost: 100 })).allowed).toBe(true)
      expect((await pro.peek(key)).remaining).toBe(900)
      expect((await pro.consume(key, { cost: 900 })).allowed).toBe(true)
      expect(await free.consume(key)).toMatchObject({ allowed: false, remaining: 0 })
      expect(await pro.consume(key)).toMatchObject({ allowed: false, remaining: 0 })
    })
  }

  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    it(`${algorithm}: a named policy is refused with a ConfigError naming it, not reset`, () => {
      const store = new RedisStore({ client: connected.client, prefix })
      const make = () => createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm }, store })
      expect(make).toThrow(ConfigError)
      expect(make).toThrow(expect.objectContaining({ field: 'limits[0].name', value: 'plan' }))
      // Unnamed, it is served as before.
      expect(() => createLimiter({ limits: { limit: 100, window: '1d', algorithm }, store })).not.toThrow()
    })
  }

  it('SyncedStore refuses every named policy with a ConfigError', async () => {
    const store = new SyncedStore({ client: connected.client, prefix })
    try {
      expect(() => createLimiter({ limits: { name: 'plan', limit: 100, window: '1d' }, store })).toThrow(
        expect.objectContaining({
          field: 'limits[0].name',
          value: 'plan',
          message: expect.stringMatching(/SyncedStore/),
        }),
      )
    } finally {
      await store.close()
    }
  })
})
