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
