import { ConfigError, parsePolicies } from '@sluice/core'
import { isThenable } from '@sluice/core/adapter'
import type { Outcome } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, privateRedisAvailable, type RedisServer, startRedisServer, uniquePrefix } from '../support/redis.js'
import { allowed, left, syncedFleet } from '../support/synced.js'
import { unhandledRejections } from '../support/unhandled.js'

const redis = await findRedis()
const ALGORITHMS = ['token-bucket', 'gcra'] as const

/**
 * Leasing on one Redis with stores as nodes on an injected, still clock (nothing refills), and an
 * interval of a minute so only `flush()` syncs: each grant and give-back is read back from the
 * key's RedisStore state.
 */
describe.skipIf(!redis)('SyncedStore leasing token bucket and GCRA', () => {
  let server: RedisServer
  let client: Redis
  beforeAll(async () => {
    server = redis as RedisServer
    client = new Redis(server.url)
    await client.ping()
  })
  afterAll(async () => {
    client?.disconnect()
    await server?.stop()
  })

  const T = 1_700_000_000_000
  const now = () => T
  const fleet = (count: number) => syncedFleet(client, { name: 'lease', count, now })

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a grant comes out of RedisStore's state, is spent in the same tick, the unused part goes back`, async () => {
      const { nodes, exact } = fleet(1)
      const [a] = nodes as [SyncedStore]
      const set = parsePolicies({ limit: 100, window: 1000, algorithm })
      expect(allowed(await a.consume('k', set, 1))).toBe(true) // a key's first take: 4 units
      expect(await left(exact, 'k', set)).toBe(96)
      await a.flush() // demand seen: topped up to a tenth of the burst
      expect(await left(exact, 'k', set)).toBe(89)
      for (let i = 0; i < 4; i++) {
        const answer = a.consume('k', set, 1)
        expect(isThenable(answer as never)).toBe(false)
        expect(allowed(answer as Outcome[])).toBe(true)
      }
      expect(await left(exact, 'k', set)).toBe(89)
      await a.close() // 6 held, given back
      expect(await left(exact, 'k', set)).toBe(95)
    })

    it(`${algorithm}: two nodes admit exactly the burst between them; what they held goes back`, async () => {
      const { nodes, exact } = fleet(2)
      // 25 ms a unit for GCRA: a tat near epoch ms holds whole milliseconds exactly, not 33.33….
      const set = parsePolicies({ limit: 40, window: 1000, algorithm })
      let admitted = 0
      for (let round = 0; round < 40; round++) {
        for (const node of nodes) if (allowed(await node.consume('hot', set, 1))) admitted++
        if (round % 5 === 4) await Promise.all(nodes.map((n) => n.flush()))
      }
      await Promise.all(nodes.map((n) => n.close()))
      // Never more than the bucket held; what was held and not spent is back in Redis.
      expect(admitted).toBeLessThanOrEqual(40)
      expect(admitted + ((await left(exact, 'hot', set)) as number)).toBe(40)
    })

    it(`${algorithm}: under 10 % of the burst left, grants are at most half of it, then per request`, async () => {
      const { nodes, exact } = fleet(1)
      const [a] = nodes as [SyncedStore]
      const set = parsePolicies({ limit: 100, window: 1000, algorithm })
      for (let i = 0; i < 94; i++) await exact.consume('low', set, 1)
      // The first take asks 4 of the 6 left: half of them, 3, come; the key goes per request.
      expect(allowed(await a.consume('low', set, 1))).toBe(true)
      expect(await left(exact, 'low', set)).toBe(3)
      await a.flush() // asks 8 more: half of 3, 1
      expect(await left(exact, 'low', set)).toBe(2)
      for (let i = 0; i < 3; i++) expect(isThenable(a.consume('low', set, 1) as never)).toBe(false)
      const exactly = a.consume('low', set, 1)
      expect(isThenable(exactly as never)).toBe(true)
      expect(allowed(await exactly)).toBe(true)
      expect(await left(exact, 'low', set)).toBe(1)
      await a.close()
    })

    it(`${algorithm}: refund goes to Redis's state; reset drops this node's grant with the state`, async () => {
      const { nodes, exact } = fleet(1)
      const [a] = nodes as [SyncedStore]
      const set = parsePolicies({ limit: 100, window: 1000, algorithm })
      await a.consume('r', set, 1)
      await a.flush()
      expect(await left(exact, 'r', set)).toBe(89)
      await a.refund('r', set, 3)
      expect(await left(exact, 'r', set)).toBe(92)
      await a.reset('r', set)
      expect(await left(exact, 'r', set)).toBe(100)
      expect(allowed(await a.consume('r', set, 1))).toBe(true) // a new take: the old grant is gone
      expect(await left(exact, 'r', set)).toBe(96)
      await a.close()
      expect(await left(exact, 'r', set)).toBe(99)
    })

    it(`${algorithm}: a key idle until its lease was forgotten, whose state Redis then lost, is rebuilt from what the lease last read`, async () => {
      let at = T
      const { nodes, exact } = syncedFleet(client, { name: 'lease-idle-lost', count: 1, now: () => at })
      const [a] = nodes as [SyncedStore]
      const set = parsePolicies({ limit: 40, window: 1000, algorithm })
      const admittedOf = async (requests: number) => {
        let admitted = 0
        for (let i = 0; i < requests; i++) if (allowed(await a.consume('idle', set, 1))) admitted++
        return admitted
      }
      expect(await admittedOf(60)).toBe(40)
      // Ten syncs without a request forget the lease (IDLE_SYNCS), giving back what it held.
      for (let i = 0; i < 12; i++) await a.flush()
      at += 100 // 4 units drip in
      await client.del(exact.keysOf('idle', set))
      // The drip and what the lease gave back (at most a tenth of the burst); main refilled it: 40.
      expect(await admittedOf(60)).toBeLessThanOrEqual(4 + 4)
      await a.close()
    })

    it(`${algorithm}: a state Redis lost (deleted, as FLUSHALL does) is rebuilt from the nodes' views, not refilled; a reset on one node is not undone by another's view`, async () => {
      let at = T
      const { nodes, exact } = syncedFleet(client, { name: 'lease-lost', count: 2, now: () => at })
      const [a, b] = nodes as [SyncedStore, SyncedStore]
      // 25 ms a unit.
      const set = parsePolicies({ limit: 40, window: 1000, algorithm })
      const admittedOf = async (requests: number) => {
        let admitted = 0
        for (let i = 0; i < requests; i++) if (allowed(await (i % 2 === 0 ? a : b).consume('lost', set, 1))) admitted++
        return admitted
      }
      expect(await admittedOf(60)).toBe(40)
      at += 100 // 4 units drip in
      await client.del(exact.keysOf('lost', set))
      // What dripped in, and what the nodes held when it was lost (at most a tenth of the burst
      // each, spent once); main refilled the lost bucket: 40 more.
      expect(await admittedOf(60)).toBeLessThanOrEqual(4 + 2 * 4)
      await a.reset('lost', set)
      at += 100 // past any denial remembered on b
      // b, whose view says the bucket is empty, asks first.
      const first = allowed(await b.consume('lost', set, 1)) ? 1 : 0
      expect(first + (await admittedOf(80))).toBe(40)
      await Promise.all(nodes.map((n) => n.close()))
    })
  }

  it('lease: false decides every request in Redis; shaping and blocking policies are never leased', async () => {
    const prefix = uniquePrefix('lease-off')
    const off = new SyncedStore({ client, prefix, interval: '1m', now, lease: false })
    const on = new SyncedStore({ client, prefix, interval: '1m', now })
    const exact = new RedisStore({ client, prefix, now, deniedCache: false })
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'gcra' })
    expect(isThenable(off.consume('k', set, 1) as never)).toBe(true)
    await off.flush()
    expect(await left(exact, 'k', set)).toBe(99)
    const shaping = parsePolicies({ limit: 100, window: 1000, algorithm: 'gcra', maxDelay: 500 })
    await on.consume('s', shaping, 1)
    await on.flush()
    expect((await exact.peek('s', shaping))[0]?.remaining).toBe(99)
    await Promise.all([off.close(), on.close()])
  })

  it('checks lease: a ConfigError naming the field and the value', () => {
    let error: unknown
    try {
      new SyncedStore({ client, lease: 'yes' as never })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).field).toBe('lease')
    expect((error as ConfigError).message).toContain('"yes"')
  })
})

describe.skipIf(!(await privateRedisAvailable()))('SyncedStore leasing when Redis goes away', () => {
  const rejections = unhandledRejections()
  beforeAll(() => rejections.watch())
  afterAll(() => rejections.unwatch())

  it('spends what it holds, then decides alone on its share: every request answered, no unhandled rejection', async () => {
    const server = await startRedisServer()
    const client = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    const store = new SyncedStore({ client, interval: 50 })
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'gcra' })
    for (let i = 0; i < 5; i++) expect(allowed(await store.consume('k', set, 1))).toBe(true)
    await server.stop()
    const hung = Symbol('hung')
    const answers: unknown[] = []
    for (let i = 0; i < 40; i++) {
      const answer = Promise.resolve(store.consume(i % 2 === 0 ? 'k' : `new-${i}`, set, 1))
      const timer = new Promise((r) => setTimeout(() => r(hung), 2000))
      answers.push(await Promise.race([answer, timer]))
      await new Promise((r) => setTimeout(r, 10))
    }
    expect(answers.filter((a) => a === hung)).toEqual([])
    // One node alive: its share is the whole limit, so all of these are admitted.
    expect(answers.every((a) => allowed(a as Outcome[]))).toBe(true)
    await store.close()
    client.disconnect()
    expect(rejections.seen).toEqual([])
  })
})
