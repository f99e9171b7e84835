import { ALGORITHMS, createLimiter, parsePolicy } from '@sluice/core'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis } from '../support/redis.js'

const shared = await findRedis()
const DAY = 86_400_000
const start = 20_000 * DAY + 1000

/**
 * A named policy keeps its usage when its limit changes, on Redis as in memory, and on a SyncedStore.
 */
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

  const onRedis = () => new RedisStore({ client: connected.client, prefix, now: () => start, deniedCache: false })
  const synced = () =>
    new SyncedStore({ client: connected.client, prefix: `${prefix}synced:`, interval: '1h', now: () => start })
  const cases = [
    ...ALGORITHMS.map((algorithm) => ['RedisStore', algorithm, onRedis] as const),
    ...(['fixed-window', 'sliding-window'] as const).map((algorithm) => ['SyncedStore', algorithm, synced] as const),
  ]

  for (const [name, algorithm, make] of cases) {
    it(`${name}, ${algorithm}: an upgrade after 100 of 100 used leaves 900, a downgrade nothing`, async () => {
      const store = make()
      try {
        const free = createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm }, store })
        const pro = createLimiter({ limits: { name: 'plan', limit: 1000, window: '1d', algorithm }, store })
        const key = `up-${algorithm}`
        expect((await free.consume(key, { cost: 100 })).allowed).toBe(true)
        expect((await pro.peek(key)).remaining).toBe(900)
        expect((await pro.consume(key, { cost: 900 })).allowed).toBe(true)
        expect(await free.consume(key)).toMatchObject({ allowed: false, remaining: 0 })
        expect(await pro.consume(key)).toMatchObject({ allowed: false, remaining: 0 })
      } finally {
        if (store instanceof SyncedStore) await store.close()
      }
    })
  }

  it('a bucket or schedule written before the burst or limit was kept reads as of the policy', async () => {
    const raw = new Redis(shared?.port ?? 0, '127.0.0.1')
    try {
      const doubles = (...values: number[]) => {
        const buffer = Buffer.alloc(8 * values.length)
        for (const [i, value] of values.entries()) buffer.writeDoubleLE(value, 8 * i)
        return buffer
      }
      const store = new RedisStore({ client: connected.client, prefix, now: () => start, deniedCache: false })
      const bucket = { limit: 100, window: 100_000, algorithm: 'token-bucket' } as const
      const schedule = { limit: 100, window: 100_000, algorithm: 'gcra' } as const
      // 40 of 100 tokens used, as 16 bytes (tokens, updated); 30 units scheduled, as 8 bytes (tat).
      await raw.set(`${prefix}{old}:b:${parsePolicy(bucket).id}`, doubles(60 * 100_000, start), 'PX', 100_000)
      await raw.set(`${prefix}{old}:b:${parsePolicy(schedule).id}`, doubles(start + 30_000), 'PX', 100_000)
      expect((await createLimiter({ limits: bucket, store }).peek('old')).remaining).toBe(60)
      expect((await createLimiter({ limits: schedule, store }).peek('old')).remaining).toBe(70)
    } finally {
      raw.disconnect()
    }
  })

  it('a named bucket is written with its rate; one written with the burst but no rate refills at the policy’s', async () => {
    const raw = new Redis(shared?.port ?? 0, '127.0.0.1')
    try {
      const store = new RedisStore({ client: connected.client, prefix, now: () => start, deniedCache: false })
      const slow = { name: 'plan', limit: 1, window: '1s', burst: 10, algorithm: 'token-bucket' } as const
      const key = `${prefix}{rate}:b:${parsePolicy(slow).id}`
      // Emptied 2.5 s ago on a burst of 5, as 24 bytes (tokens, updated, burst): 2.5 back at 1/s,
      // 2.5 of 5 used, so 7.5 of 10.
      const old = Buffer.alloc(24)
      old.writeDoubleLE(0, 0)
      old.writeDoubleLE(start - 2500, 8)
      old.writeDoubleLE(5, 16)
      await raw.set(key, old, 'PX', 100_000)
      const limiter = createLimiter({ limits: slow, store })
      expect((await limiter.peek('rate')).remaining).toBe(7)
      expect((await limiter.consume('rate')).remaining).toBe(6)
      const written = (await raw.getBuffer(key)) as Buffer
      expect([0, 8, 16, 24].map((at) => written.readDoubleLE(at))).toEqual([6500, start, 10, 1])
    } finally {
      raw.disconnect()
    }
  })

  it('SyncedStore keeps a named policy of every algorithm it serves: createLimiter takes each', async () => {
    const store = new SyncedStore({ client: connected.client, prefix })
    try {
      expect([...store.namedAlgorithms].sort()).toEqual([...(store.algorithms ?? [])].sort())
      for (const algorithm of store.algorithms) {
        expect(() =>
          createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm }, store }),
        ).not.toThrow()
      }
    } finally {
      await store.close()
    }
  })
})
