// SluiceThrottlerStorage behind @nestjs/throttler's own guard and decorators, on Redis: the flood
// of nestjs/throttler#1303 (1 000 concurrent requests against a limit of 10; with a Redis storage
// that reads and then writes, about 400 got through) is admitted exactly 10 times.
import { Agent, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Controller, Get, type INestApplication, Module } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule, type ThrottlerStorage } from '@nestjs/throttler'
import { MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RateLimitGuard, SluiceModule, SluiceThrottlerStorage } from '@sluice/nestjs'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RedisServer, startRedisServer, uniquePrefix } from '../support/redis.js'
import { get, platforms, start, statuses } from './app.js'

/** A flood is 1 000 requests through a whole Nest app: seconds on a quiet machine, more on a loaded one. */
const FLOOD_MS = 90_000

@Controller()
class Api {
  @Get()
  index() {
    return 'ok'
  }
  @Throttle({ default: { limit: 2, ttl: 60_000 } })
  @Get('strict')
  strict() {
    return 'strict'
  }
  @SkipThrottle()
  @Get('free')
  free() {
    return 'free'
  }
}

/** The module throttler's window. */
const TTL_MS = 60_000

/** Whether `from`…`to` (epoch ms) lies in one fixed window of `window` ms, with a second's margin for Redis's clock. */
function withinOneWindow(from: number, to: number, window: number): boolean {
  return Math.floor((from - 1000) / window) === Math.floor((to + 1000) / window)
}

function throttled(storage: ThrottlerStorage, limit = 10) {
  @Module({
    imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: TTL_MS, limit }], storage })],
    controllers: [Api],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class AppModule {}
  return AppModule
}

/** `n` GET requests in flight at once (on up to 200 connections); the statuses, in any order. */
async function flood(app: INestApplication, n: number): Promise<number[]> {
  const { port } = (app.getHttpServer().address() as AddressInfo) ?? {}
  const agent = new Agent({ keepAlive: true, maxSockets: 200 })
  try {
    return await Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<number>((resolve, reject) => {
            const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
              res.resume()
              res.on('end', () => resolve(res.statusCode ?? 0))
            })
            req.on('error', reject)
            req.end()
          }),
      ),
    )
  } finally {
    agent.destroy()
  }
}

/** A storage as the community Redis storages were before atomic scripts: read, then write. */
class ReadThenWrite implements ThrottlerStorage {
  constructor(private readonly client: Redis) {}
  async increment(key: string, ttl: number, limit: number) {
    const hits = Number((await this.client.get(key)) ?? 0)
    if (hits >= limit) return { totalHits: hits + 1, timeToExpire: 60, isBlocked: true, timeToBlockExpire: 60 }
    await this.client.set(key, hits + 1, 'PX', ttl)
    return { totalHits: hits + 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 }
  }
}

describe('SluiceThrottlerStorage on Redis: the flood of nestjs/throttler#1303', () => {
  let redis: RedisServer
  let client: Redis
  beforeAll(async () => {
    redis = await startRedisServer()
    client = new Redis(redis.url)
  })
  afterAll(async () => {
    client.disconnect()
    await redis.stop()
  })

  const stores: [string, () => Store & { close?(): Promise<unknown> }][] = [
    ['RedisStore', () => new RedisStore({ client, prefix: uniquePrefix('throttler-redis') })],
    ['SyncedStore', () => new SyncedStore({ client, prefix: uniquePrefix('throttler-synced'), lease: false })],
  ]
  for (const platform of platforms) {
    for (const [name, make] of stores) {
      it(`${platform}, ${name}: 1 000 concurrent requests against a limit of 10 admit exactly 10`, {
        timeout: 2 * FLOOD_MS, // a second flood when the first crossed a window's boundary
      }, async () => {
        // The throttler counts in fixed windows of its ttl from the epoch: a flood that a loaded
        // machine stretches over a boundary is admitted 10 in each window. Such a run says nothing
        // of the limit; the flood goes again on a fresh store until one falls within one window.
        for (;;) {
          const store = make()
          const app = await start(throttled(new SluiceThrottlerStorage(store)), platform)
          try {
            const began = Date.now()
            const codes = await flood(app, 1000)
            if (!withinOneWindow(began, Date.now(), TTL_MS)) continue
            expect(codes.filter((code) => code === 200)).toHaveLength(10)
            expect(codes.filter((code) => code === 429)).toHaveLength(990)
            return
          } finally {
            await app.close()
            await store.close?.()
          }
        }
      })
    }
  }

  it('the same flood through a storage that reads, then writes, gets past the limit: the test can tell', {
    timeout: FLOOD_MS,
  }, async () => {
    await client.flushdb()
    const app = await start(throttled(new ReadThenWrite(client)), 'express')
    try {
      const admitted = (await flood(app, 1000)).filter((code) => code === 200).length
      expect(admitted).toBeGreaterThan(10)
    } finally {
      await app.close()
    }
  })
})

describe.each(platforms)('SluiceThrottlerStorage keeps @nestjs/throttler apps as they are, on %s', (platform) => {
  it("the module's throttler, @Throttle's override per route, @SkipThrottle, and throttler's headers", async () => {
    const app = await start(throttled(new SluiceThrottlerStorage(new MemoryStore()), 3), platform)
    try {
      const first = await get(app, '/')
      expect(first.headers['x-ratelimit-limit']).toBe('3')
      expect(first.headers['x-ratelimit-remaining']).toBe('2')
      expect(Number(first.headers['x-ratelimit-reset'])).toBeGreaterThan(0)
      expect(await statuses(app, '/', 3)).toEqual([200, 200, 429])
      expect(await statuses(app, '/strict', 3)).toEqual([200, 200, 429])
      const denied = await get(app, '/strict')
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0)
      expect(await statuses(app, '/free', 5)).toEqual([200, 200, 200, 200, 200])
    } finally {
      await app.close()
    }
  })

  it('bad options are refused when the storage is made', () => {
    expect(() => new SluiceThrottlerStorage({} as never)).toThrow(/^store must be a sluice store/)
    expect(() => new SluiceThrottlerStorage(new MemoryStore(), { algorithm: 'gcra' as never })).toThrow(
      /^algorithm must be/,
    )
    expect(() => new SluiceThrottlerStorage(new MemoryStore(), { ttl: 1 } as never)).toThrow(
      /^ttl is not an option of SluiceThrottlerStorage/,
    )
  })
})

describe('RateLimitGuard on Redis: the same flood', () => {
  let redis: RedisServer
  let client: Redis
  beforeAll(async () => {
    redis = await startRedisServer()
    client = new Redis(redis.url)
  })
  afterAll(async () => {
    client.disconnect()
    await redis.stop()
  })

  for (const platform of platforms) {
    for (const [name, make] of [
      ['RedisStore', () => new RedisStore({ client, prefix: uniquePrefix('guard-redis') })],
      ['SyncedStore', () => new SyncedStore({ client, prefix: uniquePrefix('guard-synced'), lease: false })],
    ] as const) {
      it(`${platform}, ${name}: 1 000 concurrent requests against a limit of 10 admit exactly 10`, {
        timeout: FLOOD_MS,
      }, async () => {
        const store = make()
        @Module({
          imports: [SluiceModule.forRoot({ limits: '10/min', store })],
          controllers: [Api],
          providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
        })
        class AppModule {}
        const app = await start(AppModule, platform)
        try {
          const codes = await flood(app, 1000)
          expect(codes.filter((code) => code === 200)).toHaveLength(10)
          expect(codes.filter((code) => code === 429)).toHaveLength(990)
        } finally {
          await app.close()
          await (store as { close?(): Promise<unknown> }).close?.()
        }
      })
    }
  }
})
