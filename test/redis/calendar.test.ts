import { createLimiter, periodBounds } from '@sluice/core'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, memoryAndRedisStores, syncedStores, type TestClient } from '../support/clients.js'
import { findRedis } from '../support/redis.js'

const shared = await findRedis()
const at = (text: string) => Date.parse(text)

/**
 * Calendar periods decided alike by a MemoryStore, by the Redis script and by a SyncedStore's local
 * counts, and on Redis's own clock (the SyncedStore's: its clock moved to Redis TIME).
 */
describe.skipIf(shared === undefined)('calendar periods on Redis', () => {
  const connected = new Map<string, TestClient>()
  const synced: SyncedStore[] = []
  beforeAll(async () => {
    for (const kind of CLIENTS) connected.set(kind.name, await kind.single(shared?.port ?? 0))
  })
  afterAll(async () => {
    await Promise.all(synced.map((store) => store.close()))
    for (const c of connected.values()) c.close()
    await shared?.stop()
  })
  const prefix = `sluice-calendar-${Math.random().toString(36).slice(2)}:`
  const first = () => (connected.values().next().value as TestClient).client
  const stores = [...memoryAndRedisStores(connected, prefix), ...syncedStores(connected, prefix, synced)]

  for (const [name, make] of stores) {
    it(`${name}: a Berlin month across the spring DST change, a billing day on the 31st, and a late refund`, async () => {
      let now = at('2026-03-31T21:00:00Z')
      const limiter = createLimiter({
        limits: [
          { limit: 3, period: 'month', timeZone: 'Europe/Berlin' },
          { limit: 10, period: 'month', anchor: () => '2025-01-31', name: 'billing' },
        ],
        store: make(() => now),
      })
      const key = `month-${name}`
      const admittedAt = limiter.clock()
      await limiter.consume(key, { cost: 3 })
      const denied = await limiter.consume(key)
      expect(denied).toMatchObject({ allowed: false, retryAfter: 3_600_000 })
      expect(denied.policies[1]).toMatchObject({ remaining: 7, resetAfter: at('2026-04-30T00:00:00Z') - now })

      now = at('2026-03-31T22:00:00Z') // midnight in Berlin (+02): April
      // Admitted in Berlin's March: nothing back in its April; the billing month (31 March to 30 April) gets 3 back.
      await limiter.refund(key, { cost: 3, admittedAt })
      const april = await limiter.consume(key, { cost: 2 })
      expect(april.policies[0]).toMatchObject({
        allowed: true,
        remaining: 1,
        resetAfter: at('2026-04-30T22:00:00Z') - now,
      })
      expect(april.policies[1]).toMatchObject({ remaining: 8 })

      now = at('2026-04-30T00:00:00Z') // the billing month anchored on the 31st turns on 30 April
      expect((await limiter.peek(key)).policies[1]).toMatchObject({ remaining: 10 })
      expect((await limiter.peek(key)).policies[0]).toMatchObject({ remaining: 1 })
    })
  }

  it('decides on Redis TIME: the count is kept in one key and resetAfter is the time to the next 1st', async () => {
    const store = new RedisStore({ client: first(), prefix, deniedCache: false })
    const limiter = createLimiter({ limits: { limit: 5, period: 'month', timeZone: 'America/New_York' }, store })
    const before = Date.now()
    await limiter.consume('time', { cost: 2 })
    const decision = await limiter.consume('time')
    const after = Date.now()
    expect(decision.remaining).toBe(2)
    const { end } = periodBounds(before, 'month', 'America/New_York')
    // Redis's clock and this process's are one machine's: resetAfter lies between the two readings.
    expect(decision.resetAfter).toBeGreaterThanOrEqual(end - after - 1)
    expect(decision.resetAfter).toBeLessThanOrEqual(end - before + 1)
  })

  it('a SyncedStore decides on Redis TIME too: its clock (limiter.clock) is Redis’s, and so is the period it picks', async () => {
    const store = new SyncedStore({ client: first(), prefix: `${prefix}synced-clock:` })
    synced.push(store)
    const limiter = createLimiter({ limits: { limit: 5, period: 'month', timeZone: 'America/New_York' }, store })
    await limiter.consume('time', { cost: 2 })
    await store.flush() // its heartbeat's reply measures the offset to Redis TIME
    const before = Date.now()
    const clock = limiter.clock()
    const decision = await limiter.consume('time')
    const after = Date.now()
    expect(decision.remaining).toBe(2)
    // Redis's clock and this process's are one machine's: the store's clock lies between the two readings.
    expect(clock).toBeGreaterThanOrEqual(before - 5)
    expect(clock).toBeLessThanOrEqual(after + 5)
    const { end } = periodBounds(before, 'month', 'America/New_York')
    expect(decision.resetAfter).toBeGreaterThanOrEqual(end - after - 5)
    expect(decision.resetAfter).toBeLessThanOrEqual(end - before + 5)
  })

  it('a SyncedStore keeps a month’s hash in Redis until the month ends (and a margin for late syncs)', async () => {
    const now = at('2026-01-31T12:00:00Z')
    const store = new SyncedStore({ client: first(), prefix: `${prefix}synced-ttl:`, interval: '1h', now: () => now })
    synced.push(store)
    const limiter = createLimiter({ limits: { limit: 100, period: 'month', timeZone: 'UTC' }, store })
    await limiter.consume('ttl', { cost: 7 })
    await store.flush()
    const raw = new Redis(shared?.port ?? 0, '127.0.0.1')
    try {
      const keys = await raw.keys(`${prefix}synced-ttl:*:s:*`)
      expect(keys).toHaveLength(1)
      expect(await raw.hgetall(keys[0] as string)).toEqual({ [`a:${store.nodeId}`]: '7' })
      const ttl = await raw.pttl(keys[0] as string)
      const monthLeft = at('2026-02-01T00:00:00Z') - now
      expect(ttl).toBeGreaterThan(monthLeft)
      expect(ttl).toBeLessThanOrEqual(monthLeft + 5000)
    } finally {
      raw.disconnect()
    }
  })
})
