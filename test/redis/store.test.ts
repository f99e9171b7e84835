import { parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  commandsBetween,
  findRedis,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
} from '../support/redis.js'
import { storeBehaviour } from './suite.js'

const shared = await findRedis()

describe.skipIf(shared === undefined)('RedisStore on a single node', () => {
  const client = new Redis(shared?.url ?? '')
  afterAll(async () => {
    client.disconnect()
    await shared?.stop()
  })
  storeBehaviour(() => client)
})

describe.skipIf(!(await privateRedisAvailable()))('RedisStore round trips (private server)', () => {
  let server: RedisServer
  let client: Redis
  let admin: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    client = new Redis(server.port)
    admin = new Redis(server.port)
  })
  afterAll(async () => {
    client.disconnect()
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

  it.each([
    [false, 20],
    [true, 3], // one alone, then the other 19 in batches of up to 16
  ])('works on a client with enableAutoPipelining (coalesce: %s)', async (coalesce, calls) => {
    const pipelining = new Redis(server.port, { enableAutoPipelining: true })
    try {
      const store = new RedisStore({ client: pipelining, prefix: `auto-${coalesce}:`, deniedCache: false, coalesce })
      const set = parsePolicies({ limit: 5, window: 60_000, algorithm: 'fixed-window' })
      const before = await stats()
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.consume('one', set, 1)))
      expect(outcomes.map(([o]) => o?.allowed)).toEqual([...Array(5).fill(true), ...Array(15).fill(false)])
      expect(delta(before, await stats()).evalsha).toBe(calls)
    } finally {
      pipelining.disconnect()
    }
  })

  it('rewrites a state of the same window in place (SETRANGE), keeping the expiry PSETEX set', async () => {
    let now = 1_700_000_080_000 // 40 s into a minute (1_700_000_040_000 is a whole minute)
    const store = new RedisStore({ client, prefix: 'in-place:', deniedCache: false, now: () => now })
    const set = parsePolicies([{ limit: 100, window: 60_000, algorithm: 'fixed-window', name: 'fixed' }, '100/min'])
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
