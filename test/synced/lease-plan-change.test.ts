import { type PolicySet, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()
const allowed = (outcomes: readonly Outcome[]) => outcomes.every((o) => o.allowed)
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

  const stores = (now: () => number, count = 1, lease = true) => {
    const prefix = uniquePrefix('lease-plan')
    const nodes = Array.from(
      { length: count },
      (_, i) => new SyncedStore({ client, prefix, nodeId: `n${i}`, interval: '1m', now, lease }),
    )
    return { nodes, exact: new RedisStore({ client, prefix, now, deniedCache: false }) }
  }
  const left = async (exact: RedisStore, key: string, set: PolicySet) => (await exact.peek(key, set))[0]?.remaining

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
})
