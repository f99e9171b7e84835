import { createLimiter, type ObserveEvent, parsePolicies, type SyncEvent } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { createClient, RESP_TYPES } from 'redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import {
  commandsBetween,
  findRedis,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
  uniquePrefix,
} from '../support/redis.js'
import { storeBehaviour } from './suite.js'

const shared = await findRedis()

afterAll(async () => {
  await shared?.stop()
})

describe.skipIf(shared === undefined).each(CLIENTS)('RedisStore on a single node, $name', (kind) => {
  let connected: TestClient
  const admin = new Redis(shared?.url ?? '')
  beforeAll(async () => {
    connected = await kind.single(shared?.port ?? 0)
  })
  afterAll(() => {
    connected?.close()
    admin.disconnect()
  })
  storeBehaviour(
    () => connected.client,
    () => admin,
  )
})

describe.skipIf(shared === undefined)('RedisStore and SyncedStore on node-redis with RESP3 and a type mapping', () => {
  it('decide as on any client: every script call carries its own reply mapping', async () => {
    // What an application might set for its own commands: text for bulk strings and numbers.
    const typeMapping = { [RESP_TYPES.BLOB_STRING]: String, [RESP_TYPES.NUMBER]: String }
    const client = await createClient({
      socket: { host: '127.0.0.1', port: shared?.port },
      RESP: 3,
      commandOptions: { typeMapping },
    })
      .on('error', () => {})
      .connect()
    try {
      const prefix = uniquePrefix('mapped')
      const set = parsePolicies(['2/min', { limit: 5, window: 60_000, algorithm: 'gcra' }])
      const store = new RedisStore({ client, prefix, deniedCache: false })
      const decided = [
        await store.consume('k', set, 1),
        await store.consume('k', set, 1),
        await store.consume('k', set, 1),
      ]
      expect(decided.map((o) => o.map((p) => p.remaining))).toEqual([
        [1, 4],
        [0, 3],
        [0, 3],
      ])
      await store.reset('k', set)

      const events: SyncEvent[] = []
      const observe = (e: ObserveEvent) => void (e.type === 'sync' && events.push(e))
      const synced = new SyncedStore({ client, prefix, exactAbove: 0.3, observe })
      const counted = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
      synced.consume('k', counted, 3) // counted locally
      await synced.flush()
      // The heartbeat's sync, the key's, and one announcing it hot (3 of 10 is past half of exactAbove).
      expect(events.map((e) => e.error)).toEqual([undefined, undefined, undefined])
      expect((synced.peek('k', counted) as readonly Outcome[])[0]?.remaining).toBe(7)
      // Above 30 % of the limit: decided by the exact script, whose integer reply says admitted.
      expect((await synced.consume('k', counted, 1))[0]).toMatchObject({ allowed: true, remaining: 6 })
      await synced.reset('k', counted)
      await synced.close()
    } finally {
      client.destroy()
    }
  })
})

const privateRedis = await privateRedisAvailable()

describe.skipIf(!privateRedis).each(CLIENTS)('RedisStore round trips (private server): $name', (kind) => {
  let server: RedisServer
  let connected: TestClient
  let client: TestClient['client']
  let admin: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    connected = await kind.single(server.port)
    client = connected.client
    admin = new Redis(server.port)
  })
  afterAll(async () => {
    connected?.close()
    admin.disconnect()
    await server.stop()
  })

  const stats = async () => parseCommandStats(await admin.info('commandstats'))
  const delta = commandsBetween

  it.each([1, 2, 5])('decides %i policies with one EVALSHA', async (n) => {
    const store = new RedisStore({ client, prefix: 'rt:' })
    const set = parsePolicies(Array.from({ length: n }, (_, i) => ({ limit: 100, window: 1000 * (i + 1) })))
    await store.consume('warm', set, 1)
    const before = await stats()
    for (let i = 0; i < 10; i++) await store.consume(`user-${n}`, set, 1)
    const after = await stats()
    // One script call per decision; inside it TIME, one read of every policy's key (GET for one,
    // MGET for more) and one write per policy: PSETEX, or SETRANGE in place when the key holds a
    // state of the same window.
    const { evalsha, time, get = 0, mget = 0, psetex = 0, setrange = 0, ...other } = delta(before, after)
    expect({ evalsha, time, get, mget, other }).toEqual({
      evalsha: 10,
      time: 10,
      get: n === 1 ? 10 : 0,
      mget: n === 1 ? 0 : 10,
      other: {},
    })
    expect(psetex + setrange).toBe(10 * n)
  })

  it.runIf(kind.name === 'ioredis').each([
    [false, 20],
    [true, 3], // one alone (EVAL, which loads the script), then the other 19 in batches of up to 16
  ])('works on a client with enableAutoPipelining (coalesce: %s)', async (coalesce, calls) => {
    const pipelining = new Redis(server.port, { enableAutoPipelining: true })
    try {
      const store = new RedisStore({ client: pipelining, prefix: `auto-${coalesce}:`, deniedCache: false, coalesce })
      const set = parsePolicies({ limit: 5, window: 60_000, algorithm: 'fixed-window' })
      const before = await stats()
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.consume('one', set, 1)))
      expect(outcomes.map(([o]) => o?.allowed)).toEqual([...Array(5).fill(true), ...Array(15).fill(false)])
      const { evalsha = 0, eval: evals = 0 } = delta(before, await stats())
      expect({ evalsha, evals }).toEqual({ evalsha: calls - 1, evals: 1 })
    } finally {
      pipelining.disconnect()
    }
  })

  it('rewrites a state of the same window in place (SETRANGE), keeping the expiry PSETEX set', async () => {
    let now = 1_700_000_080_000 // 40 s into a minute (1_700_000_040_000 is a whole minute)
    const store = new RedisStore({ client, prefix: 'in-place:', deniedCache: false, now: () => now })
    // precision 1: the two-counter layout read back below (the default, 10, keeps 11 counts).
    const set = parsePolicies([
      { limit: 100, window: 60_000, algorithm: 'fixed-window', name: 'fixed' },
      { limit: 100, window: 60_000, precision: 1 },
    ])
    const keys = store.keysOf('k', set)
    let before = await stats()
    await store.consume('k', set, 1)
    expect(delta(before, await stats())).toMatchObject({ psetex: 2 })
    const ttls = await Promise.all(keys.map((k) => admin.pttl(k)))
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(20_000)

    now += 5000
    before = await stats()
    const outcomes = await store.consume('k', set, 2)
    const { psetex = 0, setrange = 0 } = delta(before, await stats())
    expect({ psetex, setrange }).toEqual({ psetex: 0, setrange: 2 })
    expect(outcomes.map((o) => o.remaining)).toEqual([97, 97])
    const after = await Promise.all(keys.map((k) => admin.pttl(k)))
    for (const [i, ttl] of after.entries()) {
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(ttls[i] as number)
    }
    // The values are the states as doubles: fixed-window start and count, sliding-window start
    // and the previous and current counts.
    const [fixed, sliding] = await Promise.all(keys.map((k) => admin.getBuffer(k)))
    expect([fixed?.readDoubleLE(0), fixed?.readDoubleLE(8)]).toEqual([1_700_000_040_000, 3])
    expect(sliding?.length).toBe(24)
    expect(sliding?.readDoubleLE(16)).toBe(3)

    // A new window starts with a fresh state and expiry.
    now += 20_000
    before = await stats()
    await store.consume('k', set, 1)
    expect(delta(before, await stats())).toMatchObject({ psetex: 2 })
    await store.reset('k', set)
  })

  it('answers a denied key locally until its retryAfter: Redis sees nothing of the flood', async () => {
    let now = 1_700_000_000_000
    const store = new RedisStore({ client, prefix: 'flood:', now: () => now })
    const set = parsePolicies([{ limit: 5, window: 10_000, algorithm: 'fixed-window' }])
    for (let i = 0; i < 5; i++) await store.consume('attacker', set, 1)
    const [denied] = await store.consume('attacker', set, 1)
    expect(denied?.allowed).toBe(false)
    const before = await stats()
    for (let i = 0; i < 1000; i++) {
      const answer = store.consume('attacker', set, 1)
      expect(answer).not.toBeInstanceOf(Promise)
    }
    now += 4000
    const [later] = await store.consume('attacker', set, 1)
    expect(later?.retryAfter).toBe((denied?.retryAfter ?? 0) - 4000)
    expect(delta(before, await stats())).toEqual({})
    // Past retryAfter the key goes back to Redis, and the window has rolled over there too.
    now += denied?.retryAfter ?? 0
    expect((await store.consume('attacker', set, 1))[0]?.allowed).toBe(true)
    expect(delta(before, await stats())).toMatchObject({ evalsha: 1 })
  })

  it.each(['fixed-window', 'gcra'] as const)(
    '%s: a denial answered locally reports whole milliseconds, as Redis does (what onLimited and the headers read)',
    async (algorithm) => {
      // The cache's clock is the monotonic one, which reads fractions of a millisecond.
      const store = new RedisStore({ client, prefix: uniquePrefix(`whole-ms-${algorithm}`) })
      const limiter = createLimiter({ limits: { limit: 2, window: '1s', algorithm }, store })
      await limiter.consume('k', { cost: 2 })
      const fromRedis = await limiter.consume('k')
      expect(fromRedis.allowed).toBe(false)
      const before = await stats()
      const decisions = [await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k')]
      expect(delta(before, await stats())).toEqual({}) // answered by the cache
      for (const d of decisions) {
        expect(d.allowed).toBe(false)
        expect(Number.isInteger(d.retryAfter)).toBe(true)
        expect(Number.isInteger(d.resetAfter)).toBe(true)
        expect(d.retryAfter).toBeLessThanOrEqual(fromRedis.retryAfter)
      }
    },
  )

  it('reset clears the local denial too; a cheaper request still asks Redis', async () => {
    const store = new RedisStore({ client, prefix: 'cache-reset:' })
    const set = parsePolicies([{ limit: 3, window: 60_000, algorithm: 'gcra' }])
    expect((await store.consume('k', set, 3))[0]?.allowed).toBe(true)
    expect((await store.consume('k', set, 2))[0]?.allowed).toBe(false)
    const before = await stats()
    await store.consume('k', set, 1)
    expect(delta(before, await stats())).toMatchObject({ evalsha: 1 })
    await store.reset('k', set)
    expect((await store.consume('k', set, 3))[0]?.allowed).toBe(true)
  })

  it('refund drops the local denial: the next request asks Redis and is admitted', async () => {
    const store = new RedisStore({ client, prefix: 'cache-refund:' })
    const set = parsePolicies([{ limit: 2, window: 60_000, algorithm: 'fixed-window' }])
    await store.consume('k', set, 2)
    expect((await store.consume('k', set, 1))[0]?.allowed).toBe(false)
    await store.refund('k', set, 1)
    const before = await stats()
    expect((await store.consume('k', set, 1))[0]).toMatchObject({ allowed: true, remaining: 0 })
    expect(delta(before, await stats())).toMatchObject({ evalsha: 1 })
    await store.reset('k', set)
  })

  it('refund recovers from SCRIPT FLUSH, giving back once', async () => {
    const store = new RedisStore({ client, prefix: 'flush-refund:', deniedCache: false })
    const set = parsePolicies([{ limit: 4, window: 60_000, algorithm: 'sliding-log' }])
    await store.consume('k', set, 3)
    await admin.script('FLUSH')
    await store.refund('k', set, 1)
    expect((await store.peek('k', set))[0]?.remaining).toBe(2)
    await store.reset('k', set)
  })

  it('applies a refund before a peek sent right behind it when the refund script was flushed', async () => {
    const store = new RedisStore({ client, prefix: 'flush-order:', deniedCache: false })
    const set = parsePolicies([{ limit: 4, window: 60_000, algorithm: 'fixed-window' }])
    await store.consume('k', set, 3)
    await store.refund('k', set, 1)
    await admin.script('FLUSH')
    // The decision script loads again (another key's decision); the refund script does not.
    expect((await store.consume('other', set, 1))[0]?.remaining).toBe(3)
    const refunded = store.refund('k', set, 1)
    const peeked = store.peek('k', set)
    const consumed = store.consume('k', set, 1)
    await refunded
    expect((await peeked)[0]?.remaining).toBe(3)
    expect((await consumed)[0]?.remaining).toBe(2)
    await store.reset('k', set)
  })

  it('keeps a penalty, a block and decisions in issue order across SCRIPT FLUSH', async () => {
    const store = new RedisStore({ client, prefix: 'flush-order-penalty:', deniedCache: false })
    const set = parsePolicies([{ limit: 4, window: 60_000, algorithm: 'token-bucket', blockFor: 30_000 }])
    await store.consume('k', set, 1)
    await store.penalize('k', set, 1)
    await store.block('k', set, 10_000)
    await store.reset('k', set)
    await admin.script('FLUSH')
    // The decision answers NOSCRIPT; everything issued behind it waits for its retry.
    const first = store.consume('k', set, 1)
    const penalized = store.penalize('k', set, 2)
    const after = store.peek('k', set)
    const blocked = store.block('k', set, 10_000)
    const denied = store.consume('k', set, 1)
    expect((await first)[0]?.remaining).toBe(3)
    await penalized
    expect((await after)[0]?.remaining).toBe(1)
    await blocked
    expect((await denied)[0]?.allowed).toBe(false)
    await store.reset('k', set)
  })

  it('recovers from SCRIPT FLUSH without counting a request twice', async () => {
    const store = new RedisStore({ client, prefix: 'flush:', deniedCache: false })
    const set = parsePolicies([{ limit: 4, window: 60_000, algorithm: 'sliding-log' }])
    expect((await store.consume('k', set, 1))[0]?.remaining).toBe(3)
    await admin.script('FLUSH')
    expect((await store.consume('k', set, 1))[0]?.remaining).toBe(2)
    await admin.script('FLUSH')
    const remaining = await Promise.all(Array.from({ length: 3 }, () => store.consume('k', set, 1)))
    expect(remaining.map((r) => r[0]?.remaining).sort()).toEqual([0, 0, 1])
    expect(remaining.filter((r) => r[0]?.allowed)).toHaveLength(2)
  })
})
