// A shared store stalls (SIGSTOP on a private redis-server) under four stores that share one
// limit: with FallbackShare each enforces its share, so the four together admit about the limit
// while it is away, not four times it; and decisions come back to Redis once it answers.
import { createLimiter, type Decision, FallbackShare, type Limiter, MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { FleetSize, RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'
import { until } from '../support/wait.js'

const PROCESSES = 4
const LIMIT = 40
const privateRedis = await privateRedisAvailable()
const ioredis = CLIENTS.find((kind) => kind.name === 'ioredis')

describe.skipIf(!privateRedis || !ioredis)('a fallback that shares, while Redis is stalled', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let server: RedisServer
  const clients: TestClient[] = []
  const fleets: FleetSize[] = []

  beforeAll(async () => {
    watch()
    server = await startRedisServer()
  })
  afterAll(async () => {
    if (server.pid !== undefined) process.kill(server.pid, 'SIGCONT')
    await Promise.all(fleets.map((fleet) => fleet.close()))
    for (const connected of clients) connected.close()
    await server.stop()
    unwatch()
    expect(unhandled).toEqual([])
  })

  /** Four "processes": each its own client, store and limiter; `fallback` makes each one's onStoreError. */
  const fleetOf = async (prefix: string, fallback: (client: TestClient) => Store): Promise<Limiter[]> =>
    Promise.all(
      Array.from({ length: PROCESSES }, async () => {
        const connected = await (ioredis as NonNullable<typeof ioredis>).single(server.port, 'recommended')
        clients.push(connected)
        return createLimiter({
          limits: [{ limit: LIMIT, window: '1h', algorithm: 'fixed-window' }],
          store: new RedisStore({ client: connected.client, prefix, deniedCache: false }),
          onStoreError: fallback(connected),
          timeout: 100,
        })
      }),
    )

  /** Every limiter asks for `rounds` decisions on one hot key; how many of each source were admitted. */
  const hammer = async (limiters: Limiter[], key: string, rounds: number) => {
    const admitted = { store: 0, fallback: 0, error: 0 }
    await Promise.all(
      limiters.map(async (limiter) => {
        for (let i = 0; i < rounds; i++) {
          const decision: Decision = await limiter.consume(key)
          if (decision.allowed) admitted[decision.source]++
        }
      }),
    )
    return admitted
  }

  const stalled = async <T>(during: () => Promise<T>): Promise<T> => {
    process.kill(server.pid as number, 'SIGSTOP')
    try {
      return await during()
    } finally {
      process.kill(server.pid as number, 'SIGCONT')
    }
  }

  it('learns the fleet from the heartbeats and admits about the limit across four stores, not four times it', async () => {
    const limiters = await fleetOf('share:', (connected) => {
      const fleet = new FleetSize({ client: connected.client, prefix: 'share:' })
      fleets.push(fleet)
      return new FallbackShare({ processes: () => fleet.processes })
    })
    await until(() => fleets.every((fleet) => fleet.processes === PROCESSES))
    // Redis answers every limiter (within the 100 ms timeout, which a busy machine may miss once).
    let round = 0
    await until(async () => (await hammer(limiters, `before-${round++}`, 1)).store === PROCESSES)

    const during = await stalled(() => hammer(limiters, 'hot', 50))
    expect(during.store).toBe(0)
    // Each enforces ⌊40 ÷ 4⌋ = 10 on its own: 40 in all.
    expect(during.fallback).toBe(LIMIT)

    // Back: the one probe a second (the default cooldown) finds Redis, and decisions come from it.
    await until(async () => (await limiters[0]?.consume('after'))?.source === 'store', { timeout: 5000 })
  })

  it('FleetSize counts the processes beating into one set, and one that closes is gone at the next beat', async () => {
    const pair = await Promise.all(
      [0, 1].map(async () => {
        const connected = await (ioredis as NonNullable<typeof ioredis>).single(server.port, 'recommended')
        clients.push(connected)
        return new FleetSize({ client: connected.client, prefix: 'pair:' })
      }),
    )
    const [staying, leaving] = pair as [FleetSize, FleetSize]
    fleets.push(staying)
    await until(() => staying.processes === 2 && leaving.processes === 2)
    await leaving.close()
    await until(() => staying.processes === 1)
  })

  it('FleetSize keeps the count while the set fills again after FLUSHALL, rather than counting 1 at its first beat', async () => {
    const pair = await Promise.all(
      [0, 1].map(async () => {
        const connected = await (ioredis as NonNullable<typeof ioredis>).single(server.port, 'recommended')
        clients.push(connected)
        return new FleetSize({ client: connected.client, prefix: 'flush:' })
      }),
    )
    fleets.push(...pair)
    await until(() => pair.every((fleet) => fleet.processes === 2))
    const admin = new Redis(server.port)
    await admin.flushall()
    // Until both have beaten into the new set (a beat a second each), the least either counted.
    let least = 2
    await until(
      async () => {
        least = Math.min(least, ...pair.map((fleet) => fleet.processes))
        return (await admin.zcard('flush:{sluice-nodes}:live')) === 2
      },
      { every: 5 },
    )
    admin.disconnect()
    expect(least).toBe(2)
  })

  it('a MemoryStore fallback enforces the whole limit in each store: four times it in all', async () => {
    const limiters = await fleetOf('whole:', () => new MemoryStore())
    const during = await stalled(() => hammer(limiters, 'hot', 50))
    expect(during.fallback).toBe(PROCESSES * LIMIT)
  })
})
