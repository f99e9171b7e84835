// Redis's own clock glitches an hour forward and is corrected (a real redis-server whose `TIME`
// steps, see test/support/shifted-clock.ts), the stores reading it as in production: no `now`.
// clock-step.test.ts moves an injected `now` instead, which is also the denied cache's clock; here
// the cache keeps its spans on this process's monotonic clock, which no step of Redis's moves.
import { type AlgorithmName, createLimiter, type Decision } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, uniquePrefix } from '../support/redis.js'
import { canShiftClocks, type ShiftedRedis, startShiftedRedis } from '../support/shifted-clock.js'
import { until } from '../support/wait.js'

const HOUR = 3_600_000
const WINDOW_MS = 2000
const available = (await privateRedisAvailable()) && (await canShiftClocks())

describe.skipIf(!available)("stores on Redis's own clock when it glitches an hour forward and is corrected", () => {
  let redis: ShiftedRedis
  let client: Redis
  beforeAll(async () => {
    redis = await startShiftedRedis()
    client = new Redis(redis.server.url)
  })
  afterAll(async () => {
    client.disconnect()
    await redis?.stop()
  })

  /**
   * Spends the key's quota (10 per 2 s) while Redis's clock is an hour ahead, until a request is
   * denied; corrects Redis's clock, and asks again at once: that denial and the first answer after.
   * `follow` waits, after each step, until the store decides on Redis's clock as it now reads.
   */
  async function spendDuringGlitch(
    store: Store,
    algorithm: AlgorithmName,
    follow: (shift: number) => Promise<unknown> = async () => {},
  ) {
    const limiter = createLimiter({ limits: { limit: 10, window: WINDOW_MS, algorithm }, store })
    // A decision before the glitch (it starts a SyncedStore's sync loop).
    await limiter.consume('before')
    await redis.shift(HOUR)
    await follow(HOUR)
    // Until a request is denied: at least the limit (more when a window turns or a bucket refills meanwhile).
    let admitted = 0
    while ((await limiter.consume('k')).allowed && admitted < 100) admitted++
    await redis.shift(0)
    await follow(0)
    const first: Decision = await limiter.consume('k')
    // No later than the clock read the denied cache measured `first` on.
    const firstAt = performance.now()
    return { admitted, first, firstAt, again: () => limiter.consume('k') }
  }

  /** The glitch spent the quota: the limit at least, and a denial came. */
  function expectSpent(admitted: number): void {
    expect(admitted).toBeGreaterThanOrEqual(10)
    expect(admitted).toBeLessThan(100)
  }

  const algorithms: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra']

  it.each(algorithms)('%s: RedisStore without its denied cache admits at once once corrected', async (algorithm) => {
    const store = new RedisStore({ client, prefix: uniquePrefix(`redis-glitch-${algorithm}`), deniedCache: false })
    const { admitted, first } = await spendDuringGlitch(store, algorithm)
    expectSpent(admitted)
    // The glitch's state lies an hour ahead of the corrected clock: the scripts read it as none.
    expect(first.allowed).toBe(true)
  })

  it.each(algorithms)(
    '%s: a denial the cache remembered during the glitch ends with the Retry-After it gave, never the hour',
    async (algorithm) => {
      const store = new RedisStore({ client, prefix: uniquePrefix(`redis-glitch-cached-${algorithm}`) })
      const { admitted, first, firstAt, again } = await spendDuringGlitch(store, algorithm)
      expectSpent(admitted)
      // Answered here without asking Redis, whose correction this process cannot see without a
      // round trip: the denial holds for what is left of the retryAfter Redis gave in the glitch,
      // on the monotonic clock.
      expect(first.allowed).toBe(false)
      // (a sliding window's may pass the window by up to a sub-window)
      expect(first.retryAfter).toBeLessThanOrEqual(1.1 * WINDOW_MS)
      // Waited on that monotonic clock: a timer may fire up to a busy loop turn early by it (Node
      // counts a timeout from the turn's start), and a retry before retryAfter may be denied.
      await until(() => performance.now() >= firstAt + first.retryAfter, { every: 5 })
      expect((await again()).allowed).toBe(true)
    },
  )

  it.each(['fixed-window', 'sliding-window', 'token-bucket', 'gcra'] as AlgorithmName[])(
    "%s: SyncedStore follows Redis's clock through the glitch and admits at once once corrected",
    async (algorithm) => {
      const store = new SyncedStore({ client, prefix: uniquePrefix(`synced-glitch-${algorithm}`), interval: 50 })
      try {
        // Window time is Redis's clock as the syncs measure it (a heartbeat a second; clock.test.ts
        // shows a step is taken from the first reply that shows it, not 10 s later).
        const follow = (shift: number) =>
          until(() => Math.abs(store.now() - Date.now() - shift) < 1000, { timeout: 5000 })
        const { admitted, first } = await spendDuringGlitch(store, algorithm, follow)
        expectSpent(admitted)
        expect(first.allowed).toBe(true)
      } finally {
        await store.close()
      }
    },
  )
})
