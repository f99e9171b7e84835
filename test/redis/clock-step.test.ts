// Clocks that step. The application server's wall clock steps back (NTP, a VM restored):
// RedisStore decides on Redis's clock, and its denied cache keeps only spans on the monotonic
// clock, so a denial it remembers still ends after its retryAfter, not after the length of the
// step. The store's own clock glitches an hour forward and is corrected: no algorithm locks a key
// for the length of the jump, and MemoryStore and RedisStore decide alike throughout.
import { type AlgorithmName, createLimiter, type Decision, MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'

const shared = await findRedis()

describe.skipIf(shared === undefined)('RedisStore when the local wall clock steps back an hour', () => {
  const client = new Redis(shared?.url ?? '', { enableOfflineQueue: true })
  afterEach(() => vi.useRealTimers())
  afterAll(async () => {
    client.disconnect()
    await shared?.stop()
  })

  it('a remembered denial ends with its retryAfter, not an hour later', async () => {
    const limiter = createLimiter({
      limits: { limit: 1, window: '1s', algorithm: 'fixed-window' },
      store: new RedisStore({ client, prefix: uniquePrefix('clock-step') }),
    })
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
    expect((await limiter.consume('k')).allowed).toBe(true)
    const denied = await limiter.consume('k')
    expect(denied.allowed).toBe(false)
    expect(denied.retryAfter).toBeLessThanOrEqual(1000)
    vi.setSystemTime(Date.now() - 3_600_000)
    // Redis's fixed window has turned once its retryAfter has passed on the real clock.
    await new Promise((resolve) => setTimeout(resolve, denied.retryAfter + 50))
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  const HOUR = 3_600_000
  const T0 = 1_800_000_000_000

  /** Spend a key's quota during a +1 h glitch, correct the clock (2 s later), then ask again each second. */
  async function glitch(store: (now: () => number) => Store, algorithm: AlgorithmName) {
    const clock = { now: T0 }
    const limiter = createLimiter({
      limits: { limit: 10, window: '10s', algorithm },
      store: store(() => clock.now),
    })
    const seen: Pick<Decision, 'allowed' | 'remaining' | 'retryAfter' | 'resetAfter'>[] = []
    const ask = async () => {
      const { allowed, remaining, retryAfter, resetAfter } = await limiter.consume('k')
      seen.push({ allowed, remaining, retryAfter, resetAfter })
      return seen.at(-1) as (typeof seen)[number]
    }
    await ask()
    clock.now = T0 + HOUR
    for (let i = 0; i < 11; i++) await ask()
    clock.now = T0 + 2000
    const after: boolean[] = []
    for (let s = 0; s < 12; s++) {
      after.push((await ask()).allowed)
      clock.now += 1000
    }
    return { seen, after }
  }

  const algorithms: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra']
  it.each(algorithms)(
    '%s: a quota spent during a +1 h glitch does not lock the key once the clock is corrected',
    async (algorithm) => {
      const memory = await glitch((now) => new MemoryStore({ now }), algorithm)
      const redis = await glitch(
        (now) => new RedisStore({ client, prefix: uniquePrefix(`glitch-${algorithm}`), now, deniedCache: false }),
        algorithm,
      )
      // The glitch spent the quota: the eleventh request of the glitch was denied.
      expect(memory.seen[11]?.allowed).toBe(false)
      // Once corrected, the key is admitted at once (the glitch's counts read as no state).
      expect(memory.after[0]).toBe(true)
      expect(memory.after.filter((allowed) => !allowed).length).toBeLessThan(12)
      expect(redis.seen).toEqual(memory.seen)
    },
  )

  it.each(algorithms)(
    '%s: one request during a +1 h glitch costs the key nothing once corrected',
    async (algorithm) => {
      const run = async (store: (now: () => number) => Store) => {
        const clock = { now: T0 }
        const limiter = createLimiter({ limits: { limit: 2, window: '10s', algorithm }, store: store(() => clock.now) })
        clock.now = T0 + HOUR
        await limiter.consume('k')
        clock.now = T0 + 1000
        return [await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k')].map((d) => ({
          allowed: d.allowed,
          retryAfter: d.retryAfter,
        }))
      }
      const memory = await run((now) => new MemoryStore({ now }))
      const redis = await run(
        (now) => new RedisStore({ client, prefix: uniquePrefix(`one-${algorithm}`), now, deniedCache: false }),
      )
      expect(memory.map((d) => d.allowed)).toEqual([true, true, false])
      // Retry-After tells the truth: within a window (and a sliding window's sub-window), not the hour.
      expect(memory[2]?.retryAfter).toBeLessThanOrEqual(11_000)
      expect(redis).toEqual(memory)
    },
  )

  it('sliding-log: entries a step back put ahead count, and are restamped at now by the next admission', async () => {
    const run = async (store: (now: () => number) => Store) => {
      const clock = { now: T0 + 5000 }
      const limiter = createLimiter({
        limits: { limit: 3, window: '10s', algorithm: 'sliding-log' },
        store: store(() => clock.now),
      })
      const seen: Pick<Decision, 'allowed' | 'remaining' | 'retryAfter' | 'resetAfter'>[] = []
      const ask = async () => {
        const { allowed, remaining, retryAfter, resetAfter } = await limiter.consume('k')
        seen.push({ allowed, remaining, retryAfter, resetAfter })
      }
      await ask()
      await ask()
      clock.now = T0
      await ask()
      await ask()
      clock.now = T0 + 10_000
      await ask()
      return seen
    }
    const memory = await run((now) => new MemoryStore({ now }))
    const redis = await run(
      (now) => new RedisStore({ client, prefix: uniquePrefix('log-restamp'), now, deniedCache: false }),
    )
    expect(memory.map((d) => d.allowed)).toEqual([true, true, true, false, true])
    // Restamped at T0, the entries of T0 + 5 s leave at T0 + 10 s, not T0 + 15 s.
    expect(memory[3]?.retryAfter).toBe(10_000)
    expect(redis).toEqual(memory)
  })
})

describe.skipIf(shared === undefined)('the denied cache and SyncedStore when the decision clock is corrected', () => {
  const client = new Redis(shared?.url ?? '', { enableOfflineQueue: true })
  afterAll(() => client.disconnect())

  const HOUR = 3_600_000
  const T0 = 1_800_000_000_000

  /** Spend a key's quota during a +1 h glitch, correct the clock, then ask once a second: seconds until admitted. */
  async function lockedFor(store: (now: () => number) => Store, algorithm: AlgorithmName): Promise<number> {
    const clock = { now: T0 + HOUR }
    const limiter = createLimiter({ limits: { limit: 10, window: '10s', algorithm }, store: store(() => clock.now) })
    for (let i = 0; i < 11; i++) await limiter.consume('k')
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now = T0 + 2000
    let waited = 0
    while (!(await limiter.consume('k')).allowed && waited < 60_000) {
      waited += 1000
      clock.now += 1000
    }
    return waited / 1000
  }

  const algorithms: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra']
  it.each(algorithms)(
    '%s: RedisStore with its default denied cache admits once corrected, as MemoryStore does',
    async (algorithm) => {
      const memory = await lockedFor((now) => new MemoryStore({ now }), algorithm)
      const redis = await lockedFor(
        (now) => new RedisStore({ client, prefix: uniquePrefix(`glitch-cached-${algorithm}`), now }),
        algorithm,
      )
      expect(memory).toBe(0)
      expect(redis).toBe(memory)
    },
  )

  it.each(['token-bucket', 'gcra', 'fixed-window', 'sliding-window'] as AlgorithmName[])(
    '%s: SyncedStore admits once corrected, as MemoryStore does',
    async (algorithm) => {
      const stores: SyncedStore[] = []
      const synced = await lockedFor((now) => {
        const store = new SyncedStore({ client, prefix: uniquePrefix(`glitch-synced-${algorithm}`), now, interval: 50 })
        stores.push(store)
        return store
      }, algorithm)
      await Promise.all(stores.map((s) => s.close()))
      expect(synced).toBe(0)
    },
  )

  it('sliding-window: a spent quota stays denied when window time steps back 30 s, on SyncedStore as on MemoryStore and RedisStore', async () => {
    const run = async (store: (now: () => number) => Store) => {
      const clock = { now: T0 + 45_000 }
      const limiter = createLimiter({
        limits: { limit: 3, window: '1m', algorithm: 'sliding-window' },
        store: store(() => clock.now),
      })
      for (let i = 0; i < 3; i++) expect((await limiter.consume('k')).allowed).toBe(true)
      expect((await limiter.consume('k')).allowed).toBe(false)
      clock.now -= 30_000
      const after: boolean[] = []
      for (let i = 0; i < 3; i++) after.push((await limiter.consume('k')).allowed)
      return after
    }
    const memory = await run((now) => new MemoryStore({ now }))
    const redis = await run((now) => new RedisStore({ client, prefix: uniquePrefix('step-back-redis'), now }))
    let synced: SyncedStore | undefined
    const local = await run((now) => {
      synced = new SyncedStore({ client, prefix: uniquePrefix('step-back-synced'), now, interval: 50 })
      return synced
    })
    await synced?.close()
    expect(memory).toEqual([false, false, false])
    expect(redis).toEqual(memory)
    expect(local).toEqual(memory)
  })
})
