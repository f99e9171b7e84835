import { parsePolicies } from '@sluice/core'
import { isThenable } from '@sluice/core/adapter'
import type { Outcome } from '@sluice/core/store'
import type { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer } from '../support/redis.js'
import { allowed, syncedFleet } from '../support/synced.js'

const redis = await findRedis()

/**
 * A node deciding a key it never counted, after another node spent the key's limit (issue 39,
 * item 3): stores as nodes on one Redis, on an injected, still clock half an hour into a 1-hour
 * window, with an interval of a minute so only `flush()` syncs and beats.
 */
describe.skipIf(!redis)(
  'SyncedStore: a key one node found hot is decided exactly by nodes that never counted it',
  () => {
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

    const HOUR = 3_600_000
    let t = Math.floor(1_700_000_000_000 / HOUR) * HOUR + HOUR / 2
    const now = () => t
    const set = parsePolicies({ limit: 100, window: HOUR, algorithm: 'fixed-window' })
    const decide = async (node: SyncedStore, key: string): Promise<boolean> => allowed(await node.consume(key, set, 1))

    /** Every node beats (learning the fleet's size); the first spends the limit of `hot` and syncs. */
    async function spentOnOne(count: number): Promise<SyncedStore[]> {
      const { nodes } = syncedFleet(client, { name: 'hot-keys', count, now })
      for (const node of nodes) {
        await decide(node, 'warm')
        await node.flush()
      }
      for (const node of nodes) await node.flush()
      expect(nodes.map((n) => n.liveNodes)).toEqual(nodes.map(() => count))
      const [first] = nodes as [SyncedStore]
      let admitted = 0
      for (let i = 0; i < 120; i++) if (await decide(first, 'hot')) admitted++
      expect(admitted).toBe(100)
      await first.flush()
      return nodes
    }

    for (const count of [4, 8]) {
      it(`${count} nodes: after the first spent the limit, the others' first requests find it spent (without the hot keys they admitted ${count === 4 ? 12 : 7} more)`, async () => {
        const nodes = await spentOnOne(count)
        t += 1000 // a heartbeat is due
        for (const node of nodes.slice(1)) await node.flush() // each beats, reading the hot keys
        let late = 0
        for (const node of nodes.slice(1)) for (let i = 0; i < 5; i++) if (await decide(node, 'hot')) late++
        expect(late).toBe(0)
        await Promise.all(nodes.map((n) => n.close()))
      })
    }

    it('a key no node found hot is still decided locally, in the same tick, by a node that never counted it', async () => {
      const nodes = await spentOnOne(4)
      const other = nodes[1] as SyncedStore
      t += 1000
      await other.flush()
      const answer = other.consume('cool', set, 1)
      expect(isThenable(answer as never)).toBe(false)
      expect(allowed(answer as Outcome[])).toBe(true)
      await Promise.all(nodes.map((n) => n.close()))
    })

    it('a hot key is hot until its window ends: in the next window a node that never counted it decides locally', async () => {
      const nodes = await spentOnOne(4)
      const other = nodes[1] as SyncedStore
      t += 1000
      await other.flush()
      expect(isThenable(other.consume('hot', set, 1) as never)).toBe(true) // exact: hot
      t += HOUR
      const third = nodes[2] as SyncedStore
      const answer = third.consume('hot', set, 1)
      expect(isThenable(answer as never)).toBe(false)
      expect(allowed(answer as Outcome[])).toBe(true)
      await Promise.all(nodes.map((n) => n.close()))
    })
  },
)
