import { parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { parseCommandStats, privateRedisAvailable, type RedisCluster, startCluster } from '../support/redis.js'
import { HOSTILE_KEYS, storeBehaviour } from './suite.js'

// One Cluster for every client library; each library's tests use prefixes of their own.
let cluster: RedisCluster
let admin: Cluster
const available = await privateRedisAvailable()
beforeAll(async () => {
  if (!available) return
  cluster = await startCluster()
  admin = new Cluster(cluster.nodes as { host: string; port: number }[])
  await admin.ping()
}, 30_000)
afterAll(async () => {
  admin?.disconnect()
  await cluster?.stop()
})

describe.skipIf(!available).each(CLIENTS)('RedisStore on a 3-master Cluster, $name', (kind) => {
  let connected: TestClient
  let client: TestClient['client']
  beforeAll(async () => {
    connected = await kind.cluster(cluster.nodes)
    client = connected.client
  })
  afterAll(() => connected?.close())

  storeBehaviour(
    () => client,
    () => admin,
  )

  it('coalesces only decisions of one client key: 30 keys × 5 at once, exact on every shard', async () => {
    const masters = admin.nodes('master')
    const store = new RedisStore({ client, prefix: `together-${kind.name}:`, deniedCache: false })
    const set = parsePolicies([
      { limit: 3, window: 60_000, algorithm: 'fixed-window' },
      { limit: 3, window: 60_000, algorithm: 'gcra', name: 'gcra' },
    ])
    const keys = Array.from({ length: 30 }, (_, i) => `client-${i}`)
    await store.consume('warm-up', set, 1) // every shard has the script after the suite above
    const calls = async () => {
      let sum = 0
      for (const node of masters) {
        const { evalsha, eval: evals } = parseCommandStats(await node.info('commandstats'))
        sum += (evalsha?.calls ?? 0) + (evals?.calls ?? 0)
      }
      return sum
    }
    const moved = async () => {
      let sum = 0
      for (const node of masters)
        sum += Number(/^errorstat_MOVED:count=(\d+)/m.exec(await node.info('errorstats'))?.[1] ?? 0)
      return sum
    }
    const [before, movedBefore] = [await calls(), await moved()]
    const asks = keys.flatMap((key) => Array.from({ length: 5 }, () => store.consume(key, set, 1)))
    const admitted = (await Promise.all(asks)).map((o) => o.every((p) => p.allowed))
    for (const [i, key] of keys.entries()) {
      expect(admitted.slice(5 * i, 5 * i + 5), key).toEqual([true, true, true, false, false])
    }
    // The first decision alone, then one call per client key (keys on one shard never share one).
    expect((await calls()) - before).toBe(1 + keys.length)
    // Each call went straight to the shard owning its keys: no node answered MOVED.
    expect((await moved()) - movedBefore).toBe(0)
    await Promise.all([...keys, 'warm-up'].map((key) => store.reset(key, set)))
  })

  it('applies a refund before a peek sent behind it on a shard its script has not run on yet', async () => {
    const store = new RedisStore({ client, prefix: `first-refund-${kind.name}:`, deniedCache: false, now: () => 1 })
    const set = parsePolicies([{ limit: 5, window: 60_000, algorithm: 'fixed-window' }])
    const nodeOf = async (key: string) => {
      const slot = Number(await admin.cluster('KEYSLOT', store.keysOf(key, set)[0] as string))
      return admin.slots[slot]?.[0]
    }
    // Two client keys on two shards: the refund script runs on the first before the second sees it.
    const first = 'shard-a'
    let other = 'shard-b-0'
    for (let i = 1; (await nodeOf(other)) === (await nodeOf(first)); i++) other = `shard-b-${i}`
    const masters = admin.nodes('master')
    await Promise.all(masters.map((node) => node.script('FLUSH')))
    for (const key of [first, other]) await store.consume(key, set, 3)
    await store.refund(first, set, 1)
    const refunded = store.refund(other, set, 1)
    const after = store.peek(other, set)
    await refunded
    expect((await after).map((o) => o.remaining)).toEqual([3])
    await Promise.all([first, other].map((key) => store.reset(key, set)))
  })

  it('heals NOSCRIPT on every shard without counting a request twice', async () => {
    const masters = admin.nodes('master')
    expect(masters).toHaveLength(3)
    await Promise.all(masters.map((node) => node.script('FLUSH')))
    await Promise.all(masters.map((node) => node.config('RESETSTAT')))

    const store = new RedisStore({ client, prefix: `noscript-${kind.name}:`, deniedCache: false })
    const set = parsePolicies([
      { limit: 3, window: 60_000, algorithm: 'fixed-window' },
      { limit: 3, window: 60_000, algorithm: 'gcra', name: 'gcra' },
    ])
    const keys = [...HOSTILE_KEYS, ...Array.from({ length: 30 }, (_, i) => `user-${i}`)]
    for (const key of keys) {
      const admitted = []
      for (let i = 0; i < 5; i++) admitted.push((await store.consume(key, set, 1)).every((o) => o.allowed))
      expect(admitted, key.slice(0, 20)).toEqual([true, true, true, false, false])
    }
    for (const node of masters) {
      const stats = parseCommandStats(await node.info('commandstats'))
      // Each shard answered NOSCRIPT once, ran the body once with EVAL, then EVALSHA for the rest.
      expect(stats.eval?.calls).toBe(1)
      expect(stats.evalsha?.calls).toBeGreaterThan(5)
    }
    await Promise.all(keys.map((key) => store.reset(key, set)))
  })
})
