import { parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Cluster } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseCommandStats, privateRedisAvailable, type RedisCluster, startCluster } from '../support/redis.js'
import { HOSTILE_KEYS, storeBehaviour } from './suite.js'

describe.skipIf(!(await privateRedisAvailable()))('RedisStore on a 3-master Cluster', () => {
  let cluster: RedisCluster
  let client: Cluster
  beforeAll(async () => {
    cluster = await startCluster()
    client = new Cluster(cluster.nodes as { host: string; port: number }[])
    await client.ping()
  }, 30_000)
  afterAll(async () => {
    client?.disconnect()
    await cluster?.stop()
  })

  storeBehaviour(() => client)

  it('coalesces only decisions of one client key: 30 keys × 5 at once, exact on every shard', async () => {
    const masters = client.nodes('master')
    const store = new RedisStore({ client, prefix: 'together:', deniedCache: false })
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
    const before = await calls()
    const asks = keys.flatMap((key) => Array.from({ length: 5 }, () => store.consume(key, set, 1)))
    const admitted = (await Promise.all(asks)).map((o) => o.every((p) => p.allowed))
    for (const [i, key] of keys.entries()) {
      expect(admitted.slice(5 * i, 5 * i + 5), key).toEqual([true, true, true, false, false])
    }
    // The first decision alone, then one call per client key (keys on one shard never share one).
    expect((await calls()) - before).toBe(1 + keys.length)
    await Promise.all([...keys, 'warm-up'].map((key) => store.reset(key, set)))
  })

  it('heals NOSCRIPT on every shard without counting a request twice', async () => {
    const masters = client.nodes('master')
    expect(masters).toHaveLength(3)
    await Promise.all(masters.map((node) => node.script('FLUSH')))
    await Promise.all(masters.map((node) => node.config('RESETSTAT')))

    const store = new RedisStore({ client, prefix: 'noscript:', deniedCache: false })
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
