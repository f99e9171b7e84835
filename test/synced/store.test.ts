import { ConfigError, createLimiter, parsePolicies, StoreFullError, type SyncEvent } from '@sluice/core'
import { isThenable } from '@sluice/core/adapter'
import type { Outcome } from '@sluice/core/store'
import { type RedisClient, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis, freePort, type RedisServer, uniquePrefix } from '../support/redis.js'
import { allowed } from '../support/synced.js'
import { unhandledRejections } from '../support/unhandled.js'

/**
 * A hash's fields by the `nodeId` given: each start's fields carry `@<start>.<random>` after it
 * (`store.nodeId`), which these tests leave out.
 */
function byName(fields: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [name.replace(/@[0-9a-z]+\.[0-9a-f]{8}$/, ''), value]),
  )
}

const redis = await findRedis()

afterAll(async () => {
  await redis?.stop()
})

describe.skipIf(!redis).each(CLIENTS)('SyncedStore on one Redis (stores as nodes, injected clock): $name', (kind) => {
  let server: RedisServer
  /** ioredis, to inspect keys; the stores use `storeClient`, of the library under test. */
  let client: Redis
  let connected: TestClient
  let storeClient: RedisClient
  beforeAll(async () => {
    server = redis as RedisServer
    client = new Redis(server.url)
    await client.ping()
    connected = await kind.single(server.port)
    storeClient = connected.client
  })
  afterAll(() => {
    client?.disconnect()
    connected?.close()
  })

  const T = 1_700_000_000_000
  /** Nodes that have read the hot keys (a heartbeat): on the still clock their first decisions need no read. */
  const nodes = async (count: number, options: { exactAbove?: number; now?: () => number } = {}) => {
    const prefix = uniquePrefix('synced')
    const now = options.now ?? (() => T + 100)
    const client = storeClient // the library under test, not the ioredis one that inspects keys
    const made = Array.from(
      { length: count },
      (_, i) =>
        new SyncedStore({ client, prefix, nodeId: `n${i}`, interval: 50, now, exactAbove: options.exactAbove ?? 1 }),
    )
    await Promise.all(made.map((node) => node.flush()))
    return made
  }

  it('answers in the same tick (a value, not a promise) for fixed and sliding windows', async () => {
    const [store] = await nodes(1)
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      const set = parsePolicies({ limit: 3, window: 1000, algorithm })
      const answers = [1, 2, 3, 4].map(() => store?.consume('k', set, 1))
      for (const answer of answers) expect(isThenable(answer as never)).toBe(false)
      expect(answers.map((a) => allowed(a as Outcome[]))).toEqual([true, true, true, false])
      expect((answers[2] as Outcome[])[0]?.remaining).toBe(0)
    }
    await store?.close()
  })

  it('sums every node: what one node counted limits the other after a sync each way (locally or exactly)', async () => {
    const [a, b] = (await nodes(2)) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 10, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 6; i++) expect(allowed(await a.consume('hot', set, 1))).toBe(true)
    await a.flush()
    await b.flush() // b has no counts yet for the key: it learns nothing until it counts there
    expect(allowed(await b.consume('hot', set, 1))).toBe(true)
    await b.flush()
    const peek = b.peek('hot', set) as Outcome[]
    expect(peek[0]?.remaining).toBe(3)
    for (let i = 0; i < 3; i++) expect(allowed(await b.consume('hot', set, 1))).toBe(true)
    expect(allowed(await b.consume('hot', set, 1))).toBe(false)
    await Promise.all([a.close(), b.close()])
  })

  it('a resent flush counts once: nodes send running totals, Redis keeps the larger', async () => {
    const [a] = (await nodes(1)) as [SyncedStore]
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 7; i++) a.consume('k', set, 1)
    await a.flush()
    await a.flush()
    await a.flush()
    const keys = await client.keys(`${a.prefix}*:s:*`)
    expect(keys).toHaveLength(1)
    const fields = byName(await client.hgetall(keys[0] as string))
    expect(fields).toEqual({ 'a:n0': '7' })
    const ttl = await client.pttl(keys[0] as string)
    expect(ttl).toBeGreaterThan(0) // the write that made the hash gave it its expiry: the window's end and a margin
    // A lost reply: the same totals arrive again from a retry, by hand.
    const sha = (await client.script('LOAD', (await import('../../packages/redis/src/lua/sync.js')).SYNC_LUA)) as string
    const reply = (await client.evalsha(sha, 1, keys[0] as string, a.nodeId, 0, 7, 0, 0, '0', 5000)) as number[]
    expect(reply[2]).toBe(7)
    await a.close()
  })

  it('before Redis has answered for a key, goes exact from exactAbove of this node’s share (limit ÷ live nodes)', async () => {
    const [a, b] = (await nodes(2, { exactAbove: 0.8 })) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 40, window: 1000, algorithm: 'fixed-window' })
    a.consume('warm', set, 1)
    b.consume('other', set, 1)
    await b.flush()
    await a.flush() // a hears of b: two live nodes; and Redis has answered for 'warm', not for 'cold'
    expect(a.liveNodes).toBe(2)
    a.consume('cold', set, 1)
    const firstExact = (key: string) => {
      for (let i = 2; i <= 40; i++) if (isThenable(a.consume(key, set, 1) as never)) return i
      return Number.POSITIVE_INFINITY
    }
    const cold = firstExact('cold')
    const warm = firstExact('warm')
    expect(cold).toBeLessThan(warm)
    await Promise.all([a.close(), b.close()])
  })

  it('a decision right after a timer that fired seconds late (a starved process) counts the stall as lag: a key near its limit goes exact', async () => {
    // The sync timer fires when the test says (setInterval is faked, interval 50 ms), on the injected clock.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    try {
      const set = parsePolicies({ limit: 100, window: '1m', algorithm: 'fixed-window' })
      let now = Math.ceil(T / 60_000) * 60_000
      const [a, b] = (await nodes(2, { exactAbove: 0.8, now: () => now })) as [SyncedStore, SyncedStore]
      b.consume('other', set, 1)
      await b.flush()
      await a.consume('k', set, 1)
      // 5 s on, with the timer on time (the lag a first jump makes decays tick by tick).
      now += 5000
      vi.advanceTimersByTime(50 * 100)
      await a.flush() // a hears of b (two live nodes) and Redis has answered for 'k'
      expect(a.liveNodes).toBe(2)
      // 56 of 100 asked over 5 s (about 11 a second), heard just now: local, below 0.8 of the limit.
      for (let i = 1; i < 56; i++) expect(isThenable(a.consume('k', set, 1) as never)).toBe(false)
      await a.flush()
      // The process stalls 2 s; its sync timer fires first, then the backlog is decided. The other
      // node may have counted 8 a second (57 over 7 s) over the stall and as long again before it
      // (its timers ran that late too, so its news was that old): 57 + 32 is above 80, exact.
      // Without the stall counted as lag, 57 + 17: local.
      now += 2000
      vi.advanceTimersByTime(50)
      const afterStall = a.consume('k', set, 1)
      expect(isThenable(afterStall as never)).toBe(true)
      expect(allowed(await afterStall)).toBe(true)
      await Promise.all([a.close(), b.close()])
    } finally {
      vi.useRealTimers()
    }
  })

  it('decides exactly (a promise, one script call) from exactAbove of the limit, counting in the same hash', async () => {
    const [a, b] = (await nodes(2, { exactAbove: 0.5 })) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 5, window: 1000, algorithm: 'fixed-window' })
    expect(isThenable(a.consume('k', set, 1) as never)).toBe(false)
    expect(isThenable(a.consume('k', set, 1) as never)).toBe(false)
    const third = a.consume('k', set, 1) // 3 of 5 is above one half: exact
    expect(isThenable(third as never)).toBe(true)
    expect(allowed(await third)).toBe(true)
    await a.flush()
    expect(allowed(await b.consume('k', set, 1))).toBe(true) // b has not heard of a's 3 yet
    await b.flush()
    const decisions = await Promise.all([b.consume('k', set, 1), b.consume('k', set, 1), a.consume('k', set, 1)])
    expect(decisions.filter(allowed)).toHaveLength(1) // 5 of 5 in Redis: exact across nodes
    await a.flush()
    await b.flush()
    const [key] = await client.keys(`${a.prefix}*:s:*`)
    const fields = byName(await client.hgetall(key as string))
    const sum = (...names: string[]) => names.reduce((total, name) => total + Number(fields[name] ?? 0), 0)
    expect(sum('a:n0', 'a:n1', 'x:n0', 'x:n1')).toBe(5)
    expect(sum('x:n0', 'x:n1')).toBeGreaterThan(0)
    expect(fields.d).toBe('1')
    await Promise.all([a.close(), b.close()])
  })

  it('an exact decision Redis answers after its timeout is denied, and taken back if the script admitted it (no deadline on an injected clock)', async ({
    skip,
  }) => {
    skip(kind.name !== 'ioredis', 'CLIENT PAUSE stalls the shared Redis: once, not once per client library')
    const [a] = (await nodes(1, { exactAbove: 0.1 })) as [SyncedStore]
    const set = parsePolicies({ limit: 10, window: 1000, algorithm: 'fixed-window' })
    expect(allowed(await a.consume('slow', set, 1))).toBe(true) // counted locally (1 of 10 is not above 0.1)
    const pauser = new Redis(server.url)
    await pauser.client('PAUSE', 600, 'ALL')
    const started = Date.now()
    expect(allowed(await a.consume('slow', set, 1))).toBe(false) // the script runs when the pause ends and admits
    expect(Date.now() - started).toBeLessThan(550)
    await a.close() // waits for the late reply, then takes it back
    pauser.disconnect()
    const [key] = await client.keys(`${a.prefix}*:s:*`)
    const fields = byName(await client.hgetall(key as string))
    // Counted by the script (x: 1) and taken back (x: 0): Redis's global count is the one admission.
    expect(fields).toEqual({ 'a:n0': '1', 'x:n0': '0' })
  })

  it('on the real clock, an exact script that runs after its deadline counts nothing: no take-back needed', async ({
    skip,
  }) => {
    skip(kind.name !== 'ioredis', 'CLIENT PAUSE stalls the shared Redis: once, not once per client library')
    const prefix = uniquePrefix('synced-deadline')
    const a = new SyncedStore({ client: storeClient, prefix, nodeId: 'n0', interval: 50, exactAbove: 0.1 })
    // An hour's window: the pause below does not move the key into a new window.
    const set = parsePolicies({ limit: 10, window: 3_600_000, algorithm: 'fixed-window' })
    expect(allowed(await a.consume('late', set, 1))).toBe(true) // counted locally
    await a.flush() // a sync measures the offset to Redis time, so exact calls carry a deadline
    const pauser = new Redis(server.url)
    await pauser.client('PAUSE', 600, 'ALL')
    expect(allowed(await a.consume('late', set, 1))).toBe(false) // timed out; the script runs when the pause ends
    await a.close()
    pauser.disconnect()
    const [key] = await client.keys(`${prefix}*:s:*`)
    const fields = byName(await client.hgetall(key as string))
    // The one local admission; the script found its deadline passed, so no x to take back with r.
    expect(fields).toEqual({ 'a:n0': '1' })
  })

  it('a denial reaches the other node at its next sync, which then denies without a Redis call', async () => {
    const [a, b] = (await nodes(2)) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 3, window: 1000, algorithm: 'sliding-window' })
    b.consume('k', set, 1)
    for (let i = 0; i < 3; i++) a.consume('k', set, 1)
    await a.flush()
    await b.flush()
    const answer = b.consume('k', set, 1)
    expect(isThenable(answer as never)).toBe(false)
    expect(allowed(answer as Outcome[])).toBe(false)
    await Promise.all([a.close(), b.close()])
  })

  it('refund gives back this node’s own counts; reset starts the key from 0 on every node', async () => {
    const [a, b] = (await nodes(2)) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 5, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 3; i++) a.consume('k', set, 1)
    for (let i = 0; i < 2; i++) b.consume('k', set, 1)
    a.refund('k', set, 1)
    await a.flush()
    await b.flush()
    expect((b.peek('k', set) as Outcome[])[0]?.remaining).toBe(1)
    await a.reset('k', set)
    await a.flush()
    await b.flush()
    expect((a.peek('k', set) as Outcome[])[0]?.remaining).toBe(5)
    expect((b.peek('k', set) as Outcome[])[0]?.remaining).toBe(5)
    for (let i = 0; i < 5; i++) expect(allowed(await b.consume('k', set, 1))).toBe(true)
    expect(allowed(await b.consume('k', set, 1))).toBe(false)
    await Promise.all([a.close(), b.close()])
  })

  it('a reset takes off what this node counted and had not synced yet, here and in Redis', async () => {
    const [a, b] = (await nodes(2, { exactAbove: 0.8 })) as [SyncedStore, SyncedStore]
    const set = parsePolicies({ limit: 5, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 3; i++) a.consume('k', set, 1)
    // No sync between: Redis has none of the 3 when the reset runs.
    await a.reset('k', set)
    // 4 locally, the 5th exact (past exactAbove): Redis must count the 3 as reset, not as news.
    for (let i = 0; i < 5; i++) expect(allowed(await a.consume('k', set, 1))).toBe(true)
    expect(allowed(await a.consume('k', set, 1))).toBe(false)
    await a.flush()
    await b.flush()
    expect(allowed(await b.consume('k', set, 1))).toBe(false)
    await Promise.all([a.close(), b.close()])
  })

  it("rejects a fixed window from each key's first request at createLimiter: its sub-windows are aligned", async () => {
    const [a] = (await nodes(1)) as [SyncedStore]
    expect(a.firstRequestWindows).toBe(false)
    const limits = { limit: 2, window: 1000, algorithm: 'fixed-window', start: 'first-request' } as const
    expect(() => createLimiter({ limits, store: a })).toThrow(ConfigError)
    expect(() => createLimiter({ limits, store: a })).toThrow(
      /limits\[0\]\.start is not served by SyncedStore.*start: 'clock'.*got "first-request"/,
    )
    await a.close()
  })

  it('serves token bucket and gcra through the exact script per request; rejects sliding-log at createLimiter', async () => {
    const [a] = (await nodes(1)) as [SyncedStore]
    const limiter = createLimiter({ limits: { limit: 2, window: 1000, algorithm: 'gcra' }, store: a })
    expect((await limiter.consume('g')).allowed).toBe(true)
    expect((await limiter.consume('g')).allowed).toBe(true)
    expect((await limiter.consume('g')).allowed).toBe(false)
    expect(() => createLimiter({ limits: { limit: 2, window: 1000, algorithm: 'sliding-log' }, store: a })).toThrow(
      /limits\[0\]\.algorithm .*SyncedStore.*"sliding-log"/,
    )
    await a.close()
  })

  it('tells observe about every sync and survives an observer that throws', async () => {
    const events: SyncEvent[] = []
    const prefix = uniquePrefix('synced-observe')
    const store = new SyncedStore({
      client: storeClient,
      prefix,
      now: () => T,
      observe: (event) => {
        if (event.type === 'sync') events.push(event)
        throw new Error('observer bug')
      },
    })
    const set = parsePolicies('5/s')
    // Both wait for one read of the hot keys (the store's first decisions).
    await Promise.all([store.consume('a', set, 1), store.consume('b', set, 1)])
    await store.flush()
    // One sync at the first decision (to learn the fleet), then the flush with both keys.
    expect(events).toHaveLength(2)
    expect(events[1]).toMatchObject({ type: 'sync', store: 'synced', keys: 2 })
    expect(events.map((e) => e.error)).toEqual([undefined, undefined])
    await store.close()
  })

  it('maxKeys: forgets a key Redis has in full; with every key unsent and Redis healthy, a new key waits for one sync, never a StoreFullError', async () => {
    const prefix = uniquePrefix('synced-forget')
    const store = new SyncedStore({ client: storeClient, prefix, maxKeys: 2, now: () => T, interval: 50 })
    await store.flush() // reads the hot keys: on the still clock no first decision waits for a read
    const set = parsePolicies({ limit: 5, window: 1000, algorithm: 'fixed-window' })
    store.consume('one', set, 1)
    store.consume('two', set, 1)
    // Full of unsent counts: the new key's decision waits for the sync that makes room.
    const three = store.consume('three', set, 1)
    expect(isThenable(three as never)).toBe(true)
    // A key it holds is still decided in the same tick.
    expect(allowed(store.consume('two', set, 1) as Outcome[])).toBe(true)
    expect(allowed(await three)).toBe(true)
    // What the evicted key counted reached Redis before it was forgotten.
    expect(await redisCount(prefix, 'one')).toBe(1)
    expect(await redisCount(prefix, 'two')).toBe(2)
    await store.close()
  })

  it('maxKeys: a flood of new keys while Redis is healthy fails no decision and keeps a held key in the same tick', async () => {
    const store = new SyncedStore({
      client: storeClient,
      prefix: uniquePrefix('flood'),
      maxKeys: 20,
      now: () => T,
      interval: 50,
    })
    await store.flush() // reads the hot keys: on the still clock no first decision waits for a read
    const set = parsePolicies({ limit: 1000, window: 60_000, algorithm: 'sliding-window' })
    const answers: (readonly Outcome[] | Promise<readonly Outcome[]>)[] = []
    for (let i = 0; i < 200; i++) {
      answers.push(store.consume(`flood-${i}`, set, 1))
      expect(isThenable(store.consume('hot', set, 1) as never)).toBe(false)
    }
    const settled = await Promise.allSettled(answers)
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([])
    await store.close()
  })

  /** Redis's global count of `key` over its sub-window hashes: Σa + Σx − Σr − o, as the scripts sum it. */
  const redisCount = async (prefix: string, key: string): Promise<number> => {
    let count = 0
    for (const hash of await client.keys(`${prefix}{${key}}:s:*`)) {
      for (const [name, value] of Object.entries(byName(await client.hgetall(hash)))) {
        if (name === 'd') continue
        count += name.startsWith('a') || name.startsWith('x') ? Number(value) : -Number(value)
      }
    }
    return count
  }
  /** A node that keeps one key in memory (a second key evicts the first), on a fixed clock. */
  const evictingNode = (prefix: string, options: { exactAbove?: number; interval?: number } = {}) =>
    new SyncedStore({
      client: storeClient,
      prefix,
      nodeId: 'n0',
      maxKeys: 1,
      now: () => T + 100,
      interval: options.interval ?? 50,
      exactAbove: options.exactAbove ?? 1,
    })

  it('maxKeys: a key evicted and counted again in the same window adds to what Redis had (admissions and refunds)', async () => {
    const prefix = uniquePrefix('synced-evict')
    const a = evictingNode(prefix)
    const b = new SyncedStore({ client: storeClient, prefix, nodeId: 'n1', interval: 50, now: () => T + 100 })
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 50; i++) await a.consume('k', set, 1)
    a.refund('k', set, 10)
    await a.flush()
    expect(await redisCount(prefix, 'k')).toBe(40)
    await a.consume('other', set, 1) // evicts 'k': Redis has all of it
    await a.flush()
    for (let i = 0; i < 30; i++) await a.consume('k', set, 1) // evicts 'other'
    a.refund('k', set, 5)
    await a.flush()
    expect(await redisCount(prefix, 'k')).toBe(65)
    await a.flush() // a resent flush of the new counts counts once
    expect(await redisCount(prefix, 'k')).toBe(65)
    // The new counters (made after the second eviction) write fields of their own beside the old ones.
    const [hash] = await client.keys(`${prefix}{k}:s:*`)
    expect(byName(await client.hgetall(hash as string))).toEqual({
      'a:n0': '50',
      'r:n0': '10',
      'a2:n0': '30',
      'r2:n0': '5',
    })
    // Another node reads the same count once it counts there.
    await b.consume('k', set, 1)
    await b.flush()
    expect((b.peek('k', set) as Outcome[])[0]?.remaining).toBe(1000 - 66)
    await Promise.all([a.close(), b.close()])
  })

  it.each(['fixed-window', 'sliding-window'] as const)(
    'maxKeys: an exact decision on a key evicted and counted again in the same window sees both counts (%s)',
    async (algorithm) => {
      const prefix = uniquePrefix('synced-evict-exact')
      // A long interval: only flushes sync, so the exact script is what carries the new local counts.
      const a = evictingNode(prefix, { exactAbove: 0.5, interval: 60_000 })
      await a.flush() // reads the hot keys: on the still clock no first decision waits for a read
      const set = parsePolicies({ limit: 10, window: 1000, algorithm })
      // 2 of 10: under half of exactAbove of the limit, so not protected from eviction.
      for (let i = 0; i < 2; i++) expect(isThenable(a.consume('k', set, 1) as never)).toBe(false)
      await a.flush()
      await a.consume('other', set, 1) // evicts 'k'
      await a.flush()
      // 'k' is new here again: local up to half the limit, then exact, which must see the 2 from before.
      let admitted = 0
      for (let i = 0; i < 10; i++) if (allowed(await a.consume('k', set, 1))) admitted++
      expect(admitted).toBe(8)
      await a.flush()
      expect(await redisCount(prefix, 'k')).toBe(10)
      await a.close()
    },
  )

  it('maxKeys: an exact admission taken back after its timeout, on a key evicted and counted again, comes off its own field', async ({
    skip,
  }) => {
    skip(kind.name !== 'ioredis', 'CLIENT PAUSE stalls the shared Redis: once, not once per client library')
    const prefix = uniquePrefix('synced-evict-take-back')
    const a = evictingNode(prefix, { exactAbove: 0.1 })
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'fixed-window' })
    // 4 of 100: under half of exactAbove of the limit, so not protected from eviction.
    for (let i = 0; i < 4; i++) expect(allowed(await a.consume('k', set, 1))).toBe(true)
    await a.flush()
    await a.consume('other', set, 1) // evicts 'k'
    await a.flush()
    // Counted locally under a new incarnation up to exactAbove of the limit.
    for (let i = 0; i < 6; i++) expect(allowed(await a.consume('k', set, 1))).toBe(true)
    await a.flush()
    const pauser = new Redis(server.url)
    await pauser.client('PAUSE', 600, 'ALL')
    expect(allowed(await a.consume('k', set, 1))).toBe(false) // the script runs when the pause ends and admits
    await a.close() // waits for the late reply, then takes it back
    pauser.disconnect()
    const [hash] = await client.keys(`${prefix}{k}:s:*`)
    expect(byName(await client.hgetall(hash as string))).toEqual({ 'a:n0': '4', 'a2:n0': '6', 'x2:n0': '0' })
  })

  it('maxKeys: a flood of new keys never frees a limited key (as MemoryStore protects one)', async () => {
    const prefix = uniquePrefix('synced-protect')
    const a = new SyncedStore({
      client: storeClient,
      prefix,
      nodeId: 'n0',
      maxKeys: 4,
      now: () => T + 100,
      interval: 50,
    })
    const set = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
    for (let i = 0; i < 10; i++) await a.consume('hot', set, 1)
    expect(allowed(await a.consume('hot', set, 1))).toBe(false)
    await a.flush()
    for (let i = 0; i < 40; i++) await a.consume(`flood-${i}`, set, 1)
    // Still held, still limited: decided in the same tick, denied.
    const after = a.consume('hot', set, 1)
    expect(isThenable(after as never)).toBe(false)
    expect(allowed(after as Outcome[])).toBe(false)
    await a.close()
  })

  it('maxKeys: a key forgotten and used again goes on from the global count it knew, in the same fields', async () => {
    const prefix = uniquePrefix('synced-ghost')
    const a = new SyncedStore({
      client: storeClient,
      prefix,
      nodeId: 'n0',
      maxKeys: 4,
      now: () => T + 100,
      interval: 50,
    })
    const set = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
    for (let i = 0; i < 3; i++) a.consume('k', set, 1)
    for (const key of ['a', 'b', 'c']) a.consume(key, set, 1)
    await a.flush()
    a.consume('d', set, 1) // a clock sweep: every key had its second chance, then 'k' (oldest) goes
    await a.flush()
    let admitted = 0
    for (let i = 0; i < 10; i++) if (allowed(await a.consume('k', set, 1))) admitted++
    expect(admitted).toBe(7)
    await a.flush()
    expect(await redisCount(prefix, 'k')).toBe(10)
    const [hash] = await client.keys(`${prefix}{k}:s:*`)
    // Incarnation 0's fields only (local and exact admissions, the denial's flag): no new ones.
    expect(Object.keys(byName(await client.hgetall(hash as string))).sort()).toEqual(['a:n0', 'd', 'x:n0'])
    await a.close()
  })

  it('maxKeys: a reset of a key evicted and counted again takes off both counts, and later counts add to 0', async () => {
    const prefix = uniquePrefix('synced-evict-reset')
    const a = evictingNode(prefix)
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'fixed-window' })
    for (let i = 0; i < 5; i++) a.consume('k', set, 1)
    await a.flush()
    await a.consume('other', set, 1) // evicts 'k'
    await a.flush()
    for (let i = 0; i < 3; i++) await a.consume('k', set, 1) // unsynced when the reset runs
    await a.reset('k', set)
    expect(await redisCount(prefix, 'k')).toBe(0)
    for (let i = 0; i < 4; i++) a.consume('k', set, 1)
    await a.flush()
    expect(await redisCount(prefix, 'k')).toBe(4)
    await a.close()
  })

  it('checks its options: a ConfigError naming the field', () => {
    const bad: [string, Record<string, unknown>][] = [
      ['client', { client: {} }],
      ['prefix', { client, prefix: 'a{b' }],
      ['interval', { client, interval: 0 }],
      ['exactAbove', { client, exactAbove: 0 }],
      ['exactAbove', { client, exactAbove: 1.5 }],
      ['maxKeys', { client, maxKeys: 0 }],
      ['nodeId', { client, nodeId: '' }],
      ['now', { client, now: 5 }],
      ['observe', { client, observe: 'x' }],
      ['weight', { client, weight: 0 }],
      ['weight', { client, weight: 1.2 }],
      ['weight', { client, weight: '0.5' }],
    ]
    for (const [field, options] of bad) {
      expect(() => new SyncedStore(options as never), field).toThrow(ConfigError)
      try {
        new SyncedStore(options as never)
      } catch (error) {
        expect((error as ConfigError).field).toBe(field)
      }
    }
  })
})

describe('SyncedStore with Redis unreachable', () => {
  const rejections = unhandledRejections()
  beforeAll(() => rejections.watch())
  afterAll(() => rejections.unwatch())

  it('never waits: decides alone on its share, keeps counting, no unhandled rejection', async () => {
    let now = 1_700_000_000_000
    const client = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    client.on('error', () => {})
    const store = new SyncedStore({ client, interval: 20, now: () => now, exactAbove: 0.5 })
    const set = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
    await store.flush()
    now += 5000
    expect(store.degraded).toBe(true)
    const answers = Array.from({ length: 12 }, () => store.consume('k', set, 1))
    for (const answer of answers) expect(isThenable(answer as never)).toBe(false)
    expect(answers.filter((a) => allowed(a as Outcome[]))).toHaveLength(10) // one live node: its share is all
    await store.close()
    client.disconnect()
    await new Promise((r) => setTimeout(r, 50))
    expect(rejections.seen).toEqual([])
  })

  it('maxKeys: full of counts it could not send, a new key is a StoreFullError (onStoreError decides it)', async () => {
    let now = 1_700_000_000_000
    const client = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    client.on('error', () => {})
    const store = new SyncedStore({ client, interval: 20, now: () => now, maxKeys: 2 })
    const set = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
    await store.flush()
    now += 5000
    store.consume('one', set, 1)
    store.consume('two', set, 1)
    expect(() => store.consume('three', set, 1)).toThrow(StoreFullError)
    expect(allowed(store.consume('two', set, 1) as Outcome[])).toBe(true)
    await store.close()
    client.disconnect()
  })

  it('unreachable from the start, on a default client: 8 decisions of each algorithm answer in the same tick (no promise: nothing waits for the connection)', async () => {
    const client = new Redis({ port: await freePort() }) // nothing listens there; ioredis defaults otherwise
    client.on('error', () => {})
    const store = new SyncedStore({ client })
    for (const algorithm of ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'] as const) {
      // 8 of a limit of 8: a connected store would go exact (one script call each) from the 7th.
      const set = parsePolicies({ limit: 8, window: 60_000, algorithm })
      const answers = Array.from({ length: 8 }, () => store.consume(`${algorithm}-k`, set, 1))
      for (const answer of answers) expect(isThenable(answer as never), algorithm).toBe(false)
      expect(
        answers.filter((a) => allowed(a as Outcome[])),
        algorithm,
      ).toHaveLength(8)
    }
    expect(store.degraded).toBe(true)
    await store.close()
    client.disconnect()
    await new Promise((r) => setTimeout(r, 50))
    expect(rejections.seen).toEqual([])
  })

  it('token bucket and gcra: a failed call is decided on this node’s share, then no call while degraded', async () => {
    let now = 1_700_000_000_000
    const client = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    client.on('error', () => {})
    const store = new SyncedStore({ client, interval: 20, now: () => now })
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const limiter = createLimiter({ limits: { limit: 4, window: 1000, algorithm }, store })
      const first = await limiter.consume(`${algorithm}-fresh`) // not degraded yet: the script call fails, then the share decides
      expect(first.allowed).toBe(true)
      expect(first.remaining).toBe(3)
    }
    await store.flush()
    now += 5000
    expect(store.degraded).toBe(true)
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const set = parsePolicies({ limit: 4, window: 1000, algorithm })
      const answers = Array.from({ length: 6 }, () => store.consume(algorithm, set, 1))
      for (const answer of answers) expect(isThenable(answer as never)).toBe(false)
      expect(answers.map((a) => allowed(a as Outcome[]))).toEqual([true, true, true, true, false, false])
    }
    await store.close()
    client.disconnect()
    await new Promise((r) => setTimeout(r, 50))
    expect(rejections.seen).toEqual([])
  })
})

describe.skipIf(!redis)('SyncedStore with Redis lost after some syncs: weighted shares', () => {
  const T = 1_700_000_000_000
  const set = parsePolicies({ limit: 100, window: 60_000, algorithm: 'fixed-window' })
  /** Two nodes on their own clients, 90 % of the key's traffic on the first: 46 and 5 admitted, synced. */
  const twoNodes = async (weight?: number) => {
    const prefix = uniquePrefix('weighted')
    const clients = [0, 1].map(() => new Redis((redis as RedisServer).url))
    for (const c of clients) {
      c.on('error', () => {})
      await c.ping()
    }
    const [busy, quiet] = clients.map(
      (client, i) =>
        new SyncedStore({
          client,
          prefix,
          nodeId: `n${i}`,
          now: () => T,
          exactAbove: 1,
          ...(weight === undefined ? {} : { weight }),
        }),
    ) as [SyncedStore, SyncedStore]
    // Each reads the hot keys: on the still clock no first decision waits for a read.
    await Promise.all([busy.flush(), quiet.flush()])
    for (let i = 0; i < 50; i++)
      expect(allowed((i % 10 === 9 ? quiet : busy).consume('k', set, 1) as Outcome[])).toBe(true)
    await busy.flush()
    await quiet.flush()
    // A sync brings back the keys decided here since the last one: the busy node decides once more to hear the 50.
    busy.consume('k', set, 1)
    await busy.flush()
    // The quiet node hears the 51 too (its own timer may or may not have synced since: on a busy machine it did).
    await quiet.flush()
    // Once a client reports it has no connection, its node is degraded at once.
    await Promise.all(
      clients.map((c) => {
        const ended = new Promise((resolve) => c.once('end', resolve))
        c.disconnect()
        return ended
      }),
    )
    expect(busy.degraded && quiet.degraded).toBe(true)
    const offer = (store: SyncedStore, count: number) =>
      Array.from({ length: count }, () => store.consume('k', set, 1)).filter((a) => allowed(a as Outcome[])).length
    return { busy, quiet, offer }
  }

  it('each node enforces its recent share of the key’s traffic: the busy node 90 %, the quiet one 10 %; the fleet stays within the limit', async () => {
    const { busy, quiet, offer } = await twoNodes()
    const more = { busy: offer(busy, 90), quiet: offer(quiet, 10) }
    // The busy node had 46 of the 51 counted: 90 of the limit is its share, 44 more (limit ÷ 2 would have
    // left it 4); the quiet node 5 of 51: 9 of the limit, 4 more.
    expect(more).toEqual({ busy: 44, quiet: 4 })
    expect(51 + more.busy + more.quiet).toBeLessThanOrEqual(100)
    await Promise.all([busy.close(), quiet.close()])
  })

  it('weight: the operator’s share of each limit instead of the learned one', async () => {
    const { busy, quiet, offer } = await twoNodes(0.5)
    expect({ busy: offer(busy, 90), quiet: offer(quiet, 90) }).toEqual({ busy: 4, quiet: 45 })
    await Promise.all([busy.close(), quiet.close()])
  })
})
