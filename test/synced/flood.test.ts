// A flood of new keys against SyncedStore with maxKeys small, on real processes and a private
// redis-server: one hot key offered 3× its limit while every other request is a new key. The hot
// key's admitted count per window (Redis's count of its window hash, every node's fields) stays
// within 5 % of its limit, and its hash's fields stay bounded (no incarnation per eviction).
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { countOf, keepingHashes, runFleet, totalsInRedis } from './fleet.js'
import type { WorkerPlan } from './plan.js'

const available = await privateRedisAvailable()
const LIMIT = 100
const WINDOW = 10_000
const DURATION = 5000
/** The hot key is offered 3× its limit per window, across the fleet. */
const HOT_RATE = (3 * LIMIT * 1000) / WINDOW

describe.skipIf(!available)('SyncedStore under a flood of new keys (maxKeys 200, real processes)', () => {
  let server: RedisServer
  let client: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    client = new Redis(server.url)
  }, 20_000)
  afterAll(async () => {
    client?.disconnect()
    await server?.stop()
  })

  it.each([
    [1, 'fixed-window'],
    [2, 'fixed-window'],
    [2, 'sliding-window'],
  ] as const)(
    '%i process(es), %s: the hot key keeps its limit in every window, its hash its fields',
    async (processes, algorithm) => {
      const prefix = `flood-${processes}-${algorithm}:`
      const plans: WorkerPlan[] = Array.from({ length: processes }, (_, i) => ({
        url: server.url,
        prefix,
        nodeId: `p${i}`,
        interval: 100,
        algorithm,
        limit: LIMIT,
        window: WINDOW,
        rates: { hot: HOT_RATE / processes, flood: 2000 / processes },
        duration: DURATION,
        seed: 1 + i,
        maxKeys: 200,
      }))
      // Every window the hot key was counted in stays readable however late the run ends.
      const results = await keepingHashes(client, prefix, () => runFleet(plans), 'hot:0')
      for (const result of results) {
        expect(result.unhandled).toEqual([])
        expect({ errors: result.errors, last: result.lastError }).toEqual({ errors: {}, last: undefined })
      }
      const hot = (await totalsInRedis(client, prefix)).get('hot:0')
      expect(hot).toBeDefined()
      const byStart = [...(hot as Map<number, Record<string, number>>)].sort(([a], [b]) => a - b)
      const offered = results.reduce((sum, r) => sum + (r.offered.hot ?? 0), 0)
      expect(offered).toBeGreaterThan((2 * LIMIT * DURATION) / WINDOW)
      // Every window the hot key was offered in (a fixed window; for a sliding window, any window's
      // worth of sub-windows, which its estimate bounds at the end of the newest): at most 105 %.
      const windows = byStart.map(([start]) => {
        let inWindow = 0
        for (const [other, totals] of byStart) if (other >= start && other < start + WINDOW) inWindow += countOf(totals)
        return inWindow
      })
      const admitted = results.reduce((sum, r) => sum + (r.admitted.hot ?? 0), 0)
      console.log(
        `${processes}× ${algorithm}: hot key offered ${offered}, admitted ${admitted}; per window in Redis ${windows.join(', ')} (limit ${LIMIT}); longest gap between syncs ${Math.round(Math.max(...results.map((r) => r.maxSyncGap)))} ms`,
      )
      for (const inWindow of windows) expect(inWindow).toBeLessThanOrEqual(1.05 * LIMIT)
      // Each node's running totals (a:, x:, maybe r:) and nothing per eviction.
      for (const [, totals] of byStart) expect(Object.keys(totals).length).toBeLessThanOrEqual(3 * processes)
    },
    60_000,
  )
})
