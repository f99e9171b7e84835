import { createLimiter, MemoryStore, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer } from '../support/redis.js'
import { allowed, syncedFleet } from '../support/synced.js'

const redis = await findRedis()

/**
 * SyncedStore with warming buckets: decided exactly through RedisStore's Lua (not leased), so two
 * nodes sharing a key follow one warm-up curve, the one a MemoryStore gives a single stream.
 */
describe.skipIf(!redis)('SyncedStore warm-up', () => {
  let client: Redis
  beforeAll(async () => {
    client = new Redis((redis as RedisServer).url)
    await client.ping()
  })
  afterAll(async () => {
    client?.disconnect()
    await redis?.stop()
  })

  const T = 1_700_000_000_000

  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    it(`${algorithm}: two nodes taking turns admit what one MemoryStore admits from cold, warming up`, async () => {
      let now = T
      const clock = () => now
      const { nodes } = syncedFleet(client, { name: 'warm', count: 2, now: clock })
      const reference = new MemoryStore({ now: clock })
      const set = parsePolicies({ limit: 20, window: 1000, algorithm, burst: 2, warmup: '2s' })
      expect(() =>
        createLimiter({ store: nodes[0] as never, limits: [{ limit: 20, window: 1000, algorithm, warmup: '2s' }] }),
      ).not.toThrow()
      const fleet: number[] = []
      const alone: number[] = []
      for (let t = 0; t < 3000; t += 5) {
        now = T + t
        const node = nodes[(t / 5) % 2] as (typeof nodes)[number]
        if (allowed(await node.consume('k', set, 1))) fleet.push(t)
        if (allowed(reference.consume('k', set, 1) as readonly Outcome[])) alone.push(t)
      }
      expect(fleet).toEqual(alone)
      // Cold, a third of 20/s; warm (after 2 s of it), the full rate.
      expect(alone.filter((t) => t < 1000).length).toBeLessThan(12)
      expect(alone.filter((t) => t >= 2000).length).toBe(20)
      await Promise.all(nodes.map((n) => n.close()))
    })
  }
})
