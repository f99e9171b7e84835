import { createLimiter, MemoryStore } from '@sluice/core'
import type { SyncedStore } from '@sluice/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, memoryAndRedisStores, syncedStores, type TestClient } from '../support/clients.js'
import { findRedis } from '../support/redis.js'

const shared = await findRedis()
const at = (text: string) => Date.parse(text)

/**
 * A named monthly quota keeps its month's usage when the plan (its limit) changes mid-month, in
 * memory, in Redis and on a SyncedStore alike, and the next month starts afresh.
 */
describe.skipIf(shared === undefined)('a named calendar quota across a plan change', () => {
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
  const prefix = `sluice-calendar-plan-${Math.random().toString(36).slice(2)}:`
  const stores = [...memoryAndRedisStores(connected, prefix), ...syncedStores(connected, prefix, synced)]

  for (const [name, make] of stores) {
    it(`${name}: free 10 000/month → pro 1 000 000 after 4 000 used leaves 996 000; back to free leaves 0 until the 1st`, async () => {
      let now = at('2026-11-14T12:00:00Z')
      const store = make(() => now)
      const plan = (limit: number) =>
        createLimiter({ limits: { limit, period: 'month', name: 'tokens' }, store, namespace: 'plans' })
      const free = plan(10_000)
      const pro = plan(1_000_000)
      const key = `customer-${name}`

      expect(await free.consume(key, { cost: 4_000 })).toMatchObject({ allowed: true, remaining: 6_000 })
      expect(await pro.peek(key)).toMatchObject({ remaining: 996_000 })
      expect(await pro.consume(key, { cost: 500_000 })).toMatchObject({ allowed: true, remaining: 496_000 })

      // Downgraded with 504 000 used of free's 10 000: nothing left, not even 1, until 1 December.
      const denied = await free.consume(key)
      expect(denied).toMatchObject({ allowed: false, remaining: 0 })
      expect(denied.retryAfter).toBe(at('2026-12-01T00:00:00Z') - now)
      // Upgrading again finds the same usage, not a fresh quota.
      expect(await pro.peek(key)).toMatchObject({ remaining: 496_000 })

      now = at('2026-12-01T00:00:00Z')
      expect(await free.peek(key)).toMatchObject({ remaining: 10_000 })
      expect(await pro.consume(key, { cost: 1 })).toMatchObject({ allowed: true, remaining: 999_999 })
      expect(await free.peek(key)).toMatchObject({ remaining: 9_999 })
    })
  }

  it('unnamed calendar quotas of two plans keep separate counts (the name is what carries usage)', async () => {
    const now = at('2026-11-14T12:00:00Z')
    const store = new MemoryStore({ now: () => now })
    const free = createLimiter({ limits: { limit: 10_000, period: 'month' }, store })
    const pro = createLimiter({ limits: { limit: 1_000_000, period: 'month' }, store })
    await free.consume('customer', { cost: 4_000 })
    expect(await pro.peek('customer')).toMatchObject({ remaining: 1_000_000 })
  })
})
