import { parsePolicies } from '@sluice/core'
import { isThenable } from '@sluice/core/adapter'
import type { Outcome } from '@sluice/core/store'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'
import { allowed, syncedFleet } from '../support/synced.js'
import { until } from '../support/wait.js'
import { countsInRedis, startWorker } from './fleet.js'
import type { WorkerPlan } from './plan.js'

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

    for (const count of [4, 8]) {
      it(`${count} nodes starting on the key together before their next heartbeat: each reads the hot keys first, and admits none`, async () => {
        const nodes = await spentOnOne(count)
        // Past the staleness bound (the interval, a minute here), no heartbeat since the key turned hot.
        t += 2 * 60_000
        let late = 0
        for (let i = 0; i < 5; i++) {
          const answers = await Promise.all(nodes.slice(1).map((node) => decide(node, 'hot')))
          late += answers.filter(Boolean).length
        }
        expect(late).toBe(0)
        await Promise.all(nodes.map((n) => n.close()))
      })
    }

    it('a key no node found hot is decided locally by a node that never counted it: in the same tick while its read of the hot keys is fresh, after one read once stale', async () => {
      const nodes = await spentOnOne(4)
      const other = nodes[1] as SyncedStore
      t += 1000
      await other.flush()
      const answer = other.consume('cool', set, 1)
      expect(isThenable(answer as never)).toBe(false)
      expect(allowed(answer as Outcome[])).toBe(true)
      t += 2 * 60_000 // the read is stale
      const unheard = other.consume('cooler', set, 1)
      expect(isThenable(unheard as never)).toBe(true)
      expect(allowed(await unheard)).toBe(true)
      expect(isThenable(other.consume('cooler', set, 1) as never)).toBe(false) // read just now
      await Promise.all(nodes.map((n) => n.close()))
    })

    it('decisions on new keys waiting in one turn share one read of the hot keys; once read, new keys decide in the same tick', async () => {
      // The node's own client, its script calls watched: a read of the hot keys is the one call with only `…:hot-since`.
      const own = new Redis(server.url)
      await own.ping() // connected: a node whose client is not reads nothing (it decides alone)
      let reads = 0
      const isRead = (numkeys: number, first: unknown) => numkeys === 1 && String(first).endsWith(':hot-since')
      const [evalsha, evaluate] = [own.evalsha.bind(own), own.eval.bind(own)]
      own.evalsha = ((sha: string, numkeys: number, ...args: string[]) => {
        if (isRead(numkeys, args[0])) reads++
        return evalsha(sha, numkeys, ...args)
      }) as typeof own.evalsha
      own.eval = ((source: string, numkeys: number, ...args: string[]) => {
        if (isRead(numkeys, args[0])) reads++
        return evaluate(source, numkeys, ...args)
      }) as typeof own.eval
      const node = new SyncedStore({ client: own, prefix: uniquePrefix('hot-read'), nodeId: 'r', interval: '1m', now })
      const answers = ['a', 'b', 'c', 'd'].map((key) => node.consume(key, set, 1))
      expect(answers.map((answer) => isThenable(answer as never))).toEqual([true, true, true, true])
      expect((await Promise.all(answers)).map(allowed)).toEqual([true, true, true, true])
      expect(reads).toBe(1)
      const fresh = node.consume('e', set, 1)
      expect(isThenable(fresh as never)).toBe(false)
      expect(reads).toBe(1)
      await node.close()
      own.disconnect()
    })

    it('a key heard in its window is decided in the same tick however old the read of the hot keys', async () => {
      const nodes = await spentOnOne(4)
      const other = nodes[1] as SyncedStore
      await decide(other, 'cool')
      await other.flush() // its count heard
      t += 2 * 60_000
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
      await third.flush() // a heartbeat: its read of the hot keys is fresh
      const answer = third.consume('hot', set, 1)
      expect(isThenable(answer as never)).toBe(false)
      expect(allowed(answer as Outcome[])).toBe(true)
      await Promise.all(nodes.map((n) => n.close()))
    })
  },
)

/**
 * The same with real processes on the real clock (100 ms interval): one spends the limit of a hot
 * key; the others, busy with other keys, are let at it once they have heard it is hot (their
 * heartbeats came after its announcement, read from Redis); without the hot keys they admitted
 * 4 each (112 of 100 on 4 processes, 6 of 6 runs).
 */
describe.skipIf(!redis)('SyncedStore processes: a hot key spent on one process stays spent on the others', () => {
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

  it('4 processes: 100 of 100 admitted on the hot key, none by the three that never counted it', async () => {
    const prefix = uniquePrefix('hot-processes')
    const plan = (i: number, rates: WorkerPlan['rates']): WorkerPlan => ({
      url: server.url,
      prefix,
      nodeId: `p${i}`,
      interval: 100,
      algorithm: 'fixed-window',
      limit: 100,
      window: 3_600_000,
      rates,
      duration: 8000,
      seed: 1 + i * 7919,
      held: ['hot'],
    })
    const workers = await Promise.all([
      startWorker({ ...plan(0, { hot: 200 }), held: [] }),
      ...[1, 2, 3].map((i) => startWorker(plan(i, { hot: 20, spread: 20 }))),
    ])
    for (const { child } of workers) child.stdin?.write('go\n')
    const live = `${prefix}{sluice-nodes}:live`
    const announced = `${prefix}{sluice-nodes}:hot-since`
    // The hot key announced, and every other process's heartbeat (which reads the announcements) since.
    await until(
      async () => {
        const hot = await client.zrange(announced, '0', '-1', 'WITHSCORES')
        const at = hot.findIndex((member) => member.endsWith('\0hot:0'))
        if (at < 0) return false
        const beats = await client.zrange(live, '0', '-1', 'WITHSCORES')
        let after = 0
        for (let i = 0; i < beats.length; i += 2) {
          if (!(beats[i] as string).startsWith('p0@') && Number(beats[i + 1]) > Number(hot[at + 1])) after++
        }
        return after === 3
      },
      { timeout: 20_000 },
    )
    for (const { child } of workers.slice(1)) child.stdin?.write('release\n')
    const results = await Promise.all(workers.map((w) => w.done))
    for (const r of results) expect(r.unhandled).toEqual([])
    const admitted = results.map((r) => r.admitted.hot ?? 0)
    for (const r of results.slice(1)) expect(r.offered.hot).toBeGreaterThanOrEqual(10)
    expect(admitted).toEqual([100, 0, 0, 0])
    // What Redis counted in the key's window(s) agrees.
    const counts = (await countsInRedis(client, prefix)).get('hot:0')
    expect([...(counts?.values() ?? [])].reduce((a, b) => a + b, 0)).toBe(100)
  }, 30_000)
})
