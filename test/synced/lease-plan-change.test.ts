import { createLimiter, type PolicySet, parsePolicies } from '@sluice/core'
import { isThenable } from '@sluice/core/adapter'
import type { Outcome } from '@sluice/core/store'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'
import { allowed, left, syncedFleet } from '../support/synced.js'
import { unhandledRejections } from '../support/unhandled.js'

const redis = await findRedis()
const ALGORITHMS = ['token-bucket', 'gcra'] as const
const T = 1_700_000_000_000

/** A named policy: its state in Redis is the same key whatever its limit and burst. */
const plan = (algorithm: (typeof ALGORITHMS)[number], limit: number, burst?: number): PolicySet =>
  parsePolicies({ name: 'plan', limit, window: 1000, algorithm, ...(burst === undefined ? {} : { burst }) })

/**
 * A named token bucket or GCRA on SyncedStore nodes that lease, across a plan change, on an
 * injected clock and an interval of a minute so only `flush()` syncs. What Redis holds is read
 * back by a RedisStore under the plan of the moment.
 */
describe.skipIf(!redis)('SyncedStore leasing a named bucket across a plan change', () => {
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

  const stores = (now: () => number, count = 1, lease = true) =>
    syncedFleet(client, { name: 'lease-plan', count, now, lease })

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a state a grant wrote keeps its burst or limit, so RedisStore converts it under another plan`, async () => {
      const { nodes, exact } = stores(() => T)
      const [node] = nodes as [SyncedStore]
      const free = plan(algorithm, 100)
      expect(allowed(await node.consume('k', free, 1))).toBe(true) // a first take: 4 units out of Redis
      expect(await left(exact, 'k', free)).toBe(96)
      // The 4 units stay used under the pro plan (1000): 996, not 96 (tokens) or 960 (a TAT read at 1 ms a unit).
      expect(await left(exact, 'k', plan(algorithm, 1000))).toBe(996)
      expect(await left(exact, 'k', plan(algorithm, 10))).toBe(6)
      await node.close()
    })

    it(`${algorithm}: a grant taken under a new plan reads the state RedisStore wrote under the old one`, async () => {
      const { nodes, exact } = stores(() => T)
      const [node] = nodes as [SyncedStore]
      expect(allowed(await exact.consume('k', plan(algorithm, 100), 100))).toBe(true)
      const pro = plan(algorithm, 1000)
      // 900 left under the pro plan: the node's first take gets its 4.
      expect(allowed(await node.consume('k', pro, 1))).toBe(true)
      expect(await left(exact, 'k', pro)).toBe(896)
      await node.close()
      expect(await left(exact, 'k', pro)).toBe(899)
    })
  }

  it('token-bucket: a state a grant wrote keeps its rate: it refills at the plan the grant was taken under', async () => {
    let now = T
    const { nodes, exact } = stores(() => now)
    const [node] = nodes as [SyncedStore]
    expect(allowed(await node.consume('k', plan('token-bucket', 100), 1))).toBe(true) // 4 units out of Redis
    now += 40
    // 40 ms at 100/s refills the 4: full on a plan of 10/s too (at 10/s from the grant it would read 6).
    expect(await left(exact, 'k', plan('token-bucket', 10))).toBe(10)
    await node.close()
  })

  for (const algorithm of ALGORITHMS) {
    for (const lease of [true, false]) {
      const held = (leased: number, exact: number) => (lease ? leased : exact)

      it(`${algorithm}, lease: ${lease}: an upgrade with a grant held keeps the units admitted; the grant goes back before the first take`, async () => {
        const { nodes, exact } = stores(() => T, 1, lease)
        const [node] = nodes as [SyncedStore]
        const free = plan(algorithm, 100)
        const pro = plan(algorithm, 1000)
        expect(allowed(await node.consume('k', free, 1))).toBe(true)
        await node.flush() // leased: held topped up to a tenth of the burst, 11 out of Redis
        for (let i = 0; i < 4; i++) expect(allowed(await node.consume('k', free, 1))).toBe(true)
        expect(await left(exact, 'k', free)).toBe(held(89, 95)) // leased: 5 admitted, 6 held
        // The first decision under pro: the 6 held under free go back, then a take of 4 out of 995.
        expect(allowed(await node.consume('k', pro, 1))).toBe(true)
        expect(await left(exact, 'k', pro)).toBe(held(991, 994))
        await node.close()
        expect(await left(exact, 'k', pro)).toBe(994) // 6 admitted, nothing held
        expect(await left(exact, 'k', free)).toBe(94)
      })

      it(`${algorithm}, lease: ${lease}: a downgrade with a grant held admits exactly what the new plan leaves`, async () => {
        const { nodes, exact } = stores(() => T, 1, lease)
        const [node] = nodes as [SyncedStore]
        const free = plan(algorithm, 100)
        const pro = plan(algorithm, 1000)
        expect(allowed(await node.consume('k', pro, 1))).toBe(true)
        await node.flush() // leased: held topped up to 100, 101 out of Redis
        for (let i = 0; i < 49; i++) expect(allowed(await node.consume('k', pro, 1))).toBe(true)
        expect(await left(exact, 'k', pro)).toBe(held(899, 950)) // leased: 50 admitted, 51 held
        // Under free, 50 used leave 50: the held 51 go back first, or they would read as 100 used.
        let admitted = 0
        for (let i = 0; i < 60; i++) if (allowed(await node.consume('k', free, 1))) admitted++
        expect(admitted).toBe(50)
        await node.close()
        expect(await left(exact, 'k', free)).toBe(0)
        expect(await left(exact, 'k', pro)).toBe(900)
      })
    }

    it(`${algorithm}: two nodes: a grant held under the old plan on another node counts as used until that node gives it back`, async () => {
      const { nodes, exact } = stores(() => T, 2)
      const [a, b] = nodes as [SyncedStore, SyncedStore]
      const free = plan(algorithm, 100)
      const pro = plan(algorithm, 1000)
      expect(allowed(await a.consume('k', free, 1))).toBe(true)
      await a.flush() // a holds 10 of the 11 it took
      expect(allowed(await b.consume('k', pro, 1))).toBe(true) // b's first take: 4 out of 989
      expect(await left(exact, 'k', pro)).toBe(985)
      // a sees no more requests: after IDLE_SYNCS (10) idle syncs its lease gives back all it holds.
      for (let i = 0; i < 10; i++) await a.flush()
      expect(await left(exact, 'k', pro)).toBe(995)
      await Promise.all([a.close(), b.close()])
      expect(await left(exact, 'k', pro)).toBe(998)
    })

    it(`${algorithm}: a grant given back after another node wrote under the new plan undoes its units, refilled at the new plan's rate`, async () => {
      let now = T
      const { nodes, exact } = stores(() => now, 2)
      const [a, b] = nodes as [SyncedStore, SyncedStore]
      const pro = plan(algorithm, 1000) // 1 unit a ms
      const free = plan(algorithm, 200) // 1 unit every 5 ms
      expect(allowed(await a.consume('k', pro, 1))).toBe(true)
      await a.flush() // a holds 100 of the 101 it took
      expect(allowed(await b.consume('k', free, 1))).toBe(true) // 99 left under free: b takes 4
      expect(await left(exact, 'k', free)).toBe(95)
      now += 5
      for (let i = 0; i < 10; i++) await a.flush() // idle: a gives back its 100
      // 2 admitted, 3 held by b, 1 unit refilled in 5 ms: 196. Refilled at pro's rate (5 units) and
      // capped at pro's burst, the bucket would read full.
      expect(await left(exact, 'k', free)).toBe(196)
      await Promise.all([a.close(), b.close()])
      expect(await left(exact, 'k', free)).toBe(199)
    })

    it(`${algorithm}: two sets with one named policy on one node neither count a unit twice nor lose one`, async () => {
      const { nodes, exact } = stores(() => T)
      const [node] = nodes as [SyncedStore]
      const alone = plan(algorithm, 100)
      const paired = parsePolicies([
        { name: 'plan', limit: 100, window: 1000, algorithm },
        { limit: 500, window: 1000, algorithm },
      ])
      let admitted = 0
      for (let i = 0; i < 150; i++) {
        if (allowed(await node.consume('k', i % 3 === 0 ? paired : alone, 1))) admitted++
        if (i % 20 === 19) await node.flush()
      }
      await node.close()
      // The named policy's 100 between both sets, whatever each held when the other asked.
      expect(admitted).toBeLessThanOrEqual(100)
      expect(admitted + ((await left(exact, 'k', alone)) as number)).toBe(100)
      expect(admitted).toBeGreaterThanOrEqual(90)
    })
  }

  it('createLimiter takes named token bucket and GCRA on a SyncedStore', async () => {
    const store = new SyncedStore({ client, prefix: uniquePrefix('lease-plan-named'), interval: '1m' })
    expect(store.namedAlgorithms).toEqual(expect.arrayContaining([...ALGORITHMS]))
    for (const algorithm of ALGORITHMS) {
      const limiter = createLimiter({ limits: { name: 'plan', limit: 10, window: '1s', algorithm }, store })
      expect((await limiter.consume('k')).remaining).toBe(9)
    }
    await store.close()
  })
})

describe('SyncedStore with Redis unreachable: a named bucket across a plan change on this node’s share', () => {
  const rejections = unhandledRejections()
  beforeAll(() => rejections.watch())
  afterAll(() => rejections.unwatch())

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: the share keeps the units used; each plan's share is its own (weight 0.5: 50 of free, 500 of pro)`, async () => {
      let now = T
      const client = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
      client.on('error', () => {})
      const store = new SyncedStore({ client, interval: 20, now: () => now, weight: 0.5 })
      await store.flush()
      now += 5000
      expect(store.degraded).toBe(true)
      const free = plan(algorithm, 100)
      const pro = plan(algorithm, 1000)
      const decide = (set: PolicySet, cost: number) => {
        const answer = store.consume('k', set, cost)
        expect(isThenable(answer as never)).toBe(false)
        return (answer as readonly Outcome[])[0] as Outcome
      }
      expect(decide(free, 30)).toMatchObject({ allowed: true, remaining: 20 })
      expect(decide(pro, 1)).toMatchObject({ allowed: true, remaining: 469 })
      expect(decide(free, 1)).toMatchObject({ allowed: true, remaining: 18 })
      expect(decide(free, 19)).toMatchObject({ allowed: false, remaining: 18 })
      await store.close()
      client.disconnect()
      await new Promise((r) => setTimeout(r, 50))
      expect(rejections.seen).toEqual([])
    })
  }
})
