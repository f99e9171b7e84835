import { ConfigError, type PolicySet, parsePolicies } from '@sluice/core'
import type { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer } from '../support/redis.js'
import { allowed, left, syncedFleet } from '../support/synced.js'
import { until } from '../support/wait.js'

const redis = await findRedis()
const ALGORITHMS = ['token-bucket', 'gcra'] as const
/** A burst of 1000 that refills 1000 a day: under 0.2 units over a test, so `left` reads what was taken. */
const slowSet = (algorithm: (typeof ALGORITHMS)[number]): PolicySet =>
  parsePolicies({ limit: 1000, window: 86_400_000, algorithm })

/** Syncs every node once, twice: the first heartbeats tell each how many nodes are live, the second sizes by it. */
async function discover(nodes: readonly SyncedStore[]): Promise<void> {
  for (let i = 0; i < 2; i++) await Promise.all(nodes.map((n) => n.flush()))
  for (const node of nodes) expect(node.liveNodes).toBe(nodes.length)
}

/** Admits `count` on `node`; how many were admitted. */
async function admit(node: SyncedStore, key: string, set: PolicySet, count: number): Promise<number> {
  let admitted = 0
  for (let i = 0; i < count; i++) if (allowed(await node.consume(key, set, 1))) admitted++
  return admitted
}

/** Units the fleet's grants hold: what left the state in Redis, less what was admitted. */
const heldBy = async (exact: RedisStore, key: string, set: PolicySet, admitted: number): Promise<number> =>
  1000 - ((await left(exact, key, set)) as number) - admitted

/**
 * The sizes of leased grants (seed 001 §4.4 (5)): the allocation handed out at a key's first take,
 * split evenly or by weight, and the fleet-wide cap on what grants hold, each node holding its part
 * of it (1 ÷ live nodes, or its weight). Nodes are stores on one Redis, on the real clock, with an
 * interval of a minute so only `flush()` syncs; the burst refills too slowly to blur a count.
 */
describe.skipIf(!redis)('SyncedStore lease sizing: allocation and the fleet cap', () => {
  let client: Redis
  const opened: SyncedStore[] = []
  beforeAll(async () => {
    client = new Redis((redis as RedisServer).url)
    await client.ping()
  })
  afterAll(async () => {
    await Promise.all(opened.map((n) => n.close()))
    client?.disconnect()
    await redis?.stop()
  })
  const fleet = (options: Omit<Parameters<typeof syncedFleet>[1], 'now'>) => {
    const made = syncedFleet(client, { now: () => Date.now(), ...options })
    opened.push(...made.nodes)
    return made
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: each node's first take is its even part of the allocation`, async () => {
      const { nodes, exact } = fleet({ name: 'alloc', count: 4, lease: { allocation: 0.5, cap: 0.5 } })
      const set = slowSet(algorithm)
      await discover(nodes)
      for (const node of nodes) expect(allowed(await node.consume('k', set, 1))).toBe(true)
      // Half the burst handed out, 125 a node (each spent 1 of it).
      expect(await left(exact, 'k', set)).toBe(500)
      expect(await heldBy(exact, 'k', set, 4)).toBe(496)
    })
  }

  it('the allocation by weight: a node of weight 0.9 takes 9 times what one of 0.1 takes', async () => {
    const { nodes, exact } = fleet({
      name: 'alloc-w',
      count: 2,
      weights: [0.9, 0.1],
      lease: { allocation: 0.5, cap: 0.5 },
    })
    const [big, small] = nodes as [SyncedStore, SyncedStore]
    const set = slowSet('token-bucket')
    await discover(nodes)
    await big.consume('k', set, 1)
    expect(await left(exact, 'k', set)).toBe(550)
    await small.consume('k', set, 1)
    expect(await left(exact, 'k', set)).toBe(500)
  })

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: 4 busy nodes never hold more than the cap between them`, async () => {
      const { nodes, exact } = fleet({ name: 'cap', count: 4, lease: { cap: 0.2 } })
      const set = slowSet(algorithm)
      await discover(nodes)
      let admitted = 0
      let most = 0
      for (let round = 0; round < 4; round++) {
        for (const node of nodes) {
          admitted += await admit(node, 'hot', set, 30)
          most = Math.max(most, await heldBy(exact, 'hot', set, admitted))
        }
        await Promise.all(nodes.map((n) => n.flush())) // each tops up to its part: 50
        most = Math.max(most, await heldBy(exact, 'hot', set, admitted))
      }
      expect(admitted).toBe(480)
      expect(most).toBe(200) // the cap, reached and not passed
    })
  }

  it("a killed node's part of the cap returns to the live nodes once it stops beating; what it held stays taken", async () => {
    const { nodes, exact } = fleet({ name: 'cap-kill', count: 2, lease: { cap: 0.2 } })
    const [survivor, victim] = nodes as [SyncedStore, SyncedStore]
    const set = slowSet('token-bucket')
    await discover(nodes)
    let admitted = 0
    for (const node of nodes) admitted += await admit(node, 'k', set, 10)
    await Promise.all(nodes.map((n) => n.flush()))
    expect(await heldBy(exact, 'k', set, admitted)).toBe(200) // 100 each
    // The victim is abandoned holding 100: no close, no give-back, no more heartbeats.
    opened.splice(opened.indexOf(victim), 1)
    await until(
      async () => {
        await survivor.flush()
        return survivor.liveNodes
      },
      { done: (live) => live === 1, timeout: 15_000, every: 250 },
    )
    admitted += await admit(survivor, 'k', set, 10)
    await survivor.flush() // its part is now the whole cap: 200
    // 200 held by the survivor, and the victim's 100 stranded.
    expect(await heldBy(exact, 'k', set, admitted)).toBe(300)
  }, 20_000)

  it('checks lease sizes at construction: a ConfigError naming the field and the value', () => {
    const cases: [unknown, string, string][] = [
      [{ cap: 0 }, 'lease.cap', '0'],
      [{ cap: 1.5 }, 'lease.cap', '1.5'],
      [{ allocation: 0.5 }, 'lease.allocation', '0.5'], // beyond the default cap, 0.1
      [{ allocation: -0.1, cap: 0.5 }, 'lease.allocation', '-0.1'],
      [{ cap: '10%' }, 'lease.cap', '"10%"'],
      [{ alocation: 0.1 }, 'alocation', 'did you mean allocation?'],
      [null, 'lease', 'null'],
    ]
    for (const [lease, field, shown] of cases) {
      let error: unknown
      try {
        fleet({ name: 'bad', lease: lease as never })
      } catch (e) {
        error = e
      }
      expect(error, JSON.stringify(lease)).toBeInstanceOf(ConfigError)
      expect((error as ConfigError).field).toBe(field)
      expect((error as ConfigError).message).toContain(shown)
    }
  })
})
