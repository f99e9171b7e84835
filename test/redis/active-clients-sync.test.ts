// RedisActiveClientsSync across three OS processes on a private redis-server (so commands can be
// counted, and the server stopped and restarted). The script's behaviour in one process is in
// active-clients-redis.test.ts, which runs beside other files (this one saturates the CPU).
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import {
  commandsBetween,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
} from '../support/redis.js'
import { until } from '../support/wait.js'

const available = await privateRedisAvailable()
const NODE = fileURLToPath(new URL('./active-clients-node.ts', import.meta.url))
const INTERVAL = 300
const MAX_ACTIVE = 100

/** A sync a node answered: when it started and ended (epoch ms). */
type Sync = [started: number, ended: number]

interface NodeState {
  size: number
  has?: boolean
  throttling: boolean
  stats: { syncs: number; errors: number; bytesSent: number; bytesReceived: number; skipped: number }
  syncs: Sync[]
  /** Ticks of a timer of the sync's interval in the node, on the sync timer's schedule. */
  ticks: number
  /** Per watched key, when the sync after which the node first had it ended. */
  learned: Record<string, number>
  unhandled: string[]
}

interface AppNode {
  send<T>(command: object): Promise<T>
  state(key?: string): Promise<NodeState>
  readonly process: ChildProcess
}

async function startNode(url: string, name: string): Promise<AppNode> {
  const child = spawn(process.execPath, [await bundled(NODE), url, name, String(INTERVAL), String(MAX_ACTIVE)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
  const first = await lines.next()
  if (first.value !== 'ready') throw new Error(`node said ${first.value}`)
  let queue = Promise.resolve<unknown>(undefined)
  const send = <T>(command: object): Promise<T> => {
    const answer = queue.then(async () => {
      child.stdin!.write(`${JSON.stringify(command)}\n`)
      const line = await lines.next()
      if (line.done) throw new Error('node exited')
      return JSON.parse(line.value) as T
    })
    queue = answer.catch(() => undefined)
    return answer
  }
  return { send, state: (key) => send<NodeState>({ op: 'state', key }), process: child }
}

const spread = (sizes: number[]) => (Math.max(...sizes) - Math.min(...sizes)) / Math.max(...sizes)

/**
 * The first of `syncs` that started after `time`: it carried (or read) whatever was there at
 * `time`. The 1 ms covers a start read off two clocks (Date.now less a performance.now duration).
 */
const firstStartedAfter = (syncs: Sync[], time: number): Sync | undefined =>
  syncs.find(([started]) => started > time + 1)

/** Timer ticks a sync attempt answered to: one call per tick, none skipped without a count. */
const attempts = (state: NodeState) => state.stats.syncs + state.stats.errors + state.stats.skipped

describe.skipIf(!available)('RedisActiveClientsSync across three processes', () => {
  let server: RedisServer
  let admin: Redis
  let nodes: AppNode[] = []
  const name = `issue11-${process.pid}-${Date.now().toString(36)}`

  beforeAll(async () => {
    server = await startRedisServer()
    admin = new Redis(server.url)
    admin.on('error', () => {})
    nodes = await Promise.all([0, 1, 2].map(() => startNode(server.url, name)))
  }, 30_000)

  afterAll(async () => {
    for (const node of nodes) node.process.kill()
    admin?.disconnect()
    await server?.stop()
  })

  // Within two intervals on time: A's next sync sends the client, the next sync of B (and C) after
  // it reads it. Said in syncs, whose timers a loaded machine runs late: one sync per tick is
  // proved below.
  it("admits on B and C, in throttling mode, a client first seen on A, by their first sync after A's next", async () => {
    const [a, b, c] = nodes as [AppNode, AppNode, AppNode]
    for (const node of [b, c]) expect(await node.send({ op: 'watch', key: 'alice' })).toEqual({ has: false })
    const seenOnA = await a.send<{ kind: string; at: number }>({ op: 'admit', key: 'alice' })
    expect(seenOnA.kind).toBe('continue')
    // C brings the service past maxActive.
    await c.send({ op: 'add', prefix: 'crowd', count: 150 })
    for (const node of [b, c]) {
      const [onA, state] = await until(() => Promise.all([a.state(), node.state('alice')]), {
        done: ([onA, s]) => {
          const sent = firstStartedAfter(onA.syncs, seenOnA.at)
          return sent !== undefined && firstStartedAfter(s.syncs, sent[1]) !== undefined && s.size > MAX_ACTIVE
        },
        what: "A's next sync, and one of the node's after it, with the crowd counted",
      })
      const sent = firstStartedAfter(onA.syncs, seenOnA.at) as Sync
      const read = firstStartedAfter(state.syncs, sent[1]) as Sync
      expect(state.has).toBe(true)
      expect(state.learned.alice).toBeLessThanOrEqual(read[1])
      const known = await node.send<{ kind: string; state: { throttling: boolean; known: boolean } }>({
        op: 'admit',
        key: 'alice',
      })
      expect(known).toMatchObject({ kind: 'continue', state: { throttling: true, known: true } })
      expect(await node.send({ op: 'admit', key: 'newcomer' })).toMatchObject({ kind: 'deny' })
    }
  })

  it('agrees on size() within 2 % on every node', async () => {
    const [a, b, c] = nodes as [AppNode, AppNode, AppNode]
    await Promise.all([
      a.send({ op: 'add', prefix: 'a', count: 3000 }),
      b.send({ op: 'add', prefix: 'b', count: 2000 }),
      c.send({ op: 'add', prefix: 'c', count: 1000 }),
    ])
    const added = Date.now()
    // Each node sends its clients in its first sync after they were added; every node has them
    // all once it ran a sync that started after the last of those ended: one round of syncs,
    // however late a loaded machine runs them.
    const states = await until(() => Promise.all(nodes.map((n) => n.state())), {
      done: (all) => {
        const sent = all.map((s) => firstStartedAfter(s.syncs, added))
        if (sent.some((sync) => sync === undefined)) return false
        const lastSent = Math.max(...sent.map((sync) => (sync as Sync)[1]))
        return all.every((s) => firstStartedAfter(s.syncs, lastSent) !== undefined)
      },
      what: "a sync on every node after every node's adds were sent",
    })
    const sizes = states.map((s) => s.size)
    expect(sizes.every((size) => size > 6000)).toBe(true)
    expect(spread(sizes)).toBeLessThan(0.02)
    expect(Math.abs(sizes[0]! - 6152) / 6152).toBeLessThan(0.05)
  })

  it('makes one script call per interval per process at 100 and 10 000 requests per second', async () => {
    const phase = async (perSecond: number, tag: string) => {
      const before = await Promise.all(nodes.map((n) => n.state()))
      const commandsBefore = parseCommandStats(await admin.info('commandstats'))
      const started = performance.now()
      await Promise.all(
        nodes.map((n, i) => n.send({ op: 'load', count: perSecond * 1.8, ms: 1800, tag: `${tag}${i}` })),
      )
      const seconds = (performance.now() - started) / 1000
      const ran = commandsBetween(commandsBefore, parseCommandStats(await admin.info('commandstats')))
      const after = await Promise.all(nodes.map((n) => n.state()))
      const calls = (ran.evalsha ?? 0) + (ran.eval ?? 0)
      const ticks = after.reduce((sum, state, i) => sum + state.ticks - (before[i] as NodeState).ticks, 0)
      console.log(
        `${perSecond}/s: ${calls} script calls in ${seconds.toFixed(2)} s (${(calls / nodes.length / seconds).toFixed(2)} per process per second) for ${ticks} ticks`,
      )
      return { calls, ticks, seconds, after }
    }
    for (const { calls, ticks, seconds, after } of [await phase(100, 'slow'), await phase(10_000, 'fast')]) {
      // Since it started, every node made one sync attempt per tick of its interval, whatever the
      // traffic and however late the timers ran: give or take one, the sync in flight (not yet
      // counted) or the timer that fired a moment before the node's own.
      for (const state of after) expect(Math.abs(attempts(state) - state.ticks)).toBeLessThanOrEqual(1)
      // And those attempts are the script calls Redis ran (give or take one in flight per node at
      // either end): no other call per request; never more than one per interval and node.
      expect(Math.abs(calls - ticks)).toBeLessThanOrEqual(2 * nodes.length)
      expect(calls).toBeLessThanOrEqual(nodes.length * ((seconds * 1000) / INTERVAL + 1))
    }
  })

  it('serves requests without waiting while Redis is down, and converges once it is back', async () => {
    const [a, b, c] = nodes as [AppNode, AppNode, AppNode]
    const port = server.port
    await server.stop()
    // Without waiting: every plan answers at once, none waits for a reply or a timeout.
    const during = await a.send<{ kind: string; atOnce: boolean }>({ op: 'admit', key: 'alice' })
    expect(during).toMatchObject({ kind: 'continue', atOnce: true })
    // Recorded on A only while Redis is away.
    await a.send({ op: 'add', prefix: 'outage-alice', count: 1 })
    await a.send({ op: 'add', prefix: 'outage-a', count: 500 })
    await c.send({ op: 'add', prefix: 'outage-c', count: 500 })
    const { waited } = await b.send<{ waited: number }>({ op: 'load', count: 200, ms: 2 * INTERVAL, tag: 'down' })
    expect(waited).toBe(0)
    // Down until every node's sync has failed (timed out: 5 intervals): the outage was seen, not
    // merely sat out in the client's offline queue.
    await until(async () => (await Promise.all(nodes.map((n) => n.state()))).every((s) => s.stats.errors > 0), {
      what: 'a failed sync on every node',
    })
    server = await startRedisServer({ port })
    admin.disconnect()
    admin = new Redis(server.url)
    admin.on('error', () => {})
    const states = await until(async () => Promise.all(nodes.map((n) => n.state('outage-alice-0'))), {
      done: (all) => all.every((s) => s.has) && spread(all.map((s) => s.size)) < 0.02,
      timeout: 10_000,
    })
    expect(states.map((s) => s.has)).toEqual([true, true, true])
    expect(spread(states.map((s) => s.size))).toBeLessThan(0.02)
    for (const node of nodes) {
      const closed = await node.send<{ unhandled: string[] }>({ op: 'close' })
      expect(closed.unhandled).toEqual([])
    }
  }, 30_000)
})
