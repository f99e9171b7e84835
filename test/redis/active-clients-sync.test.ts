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

interface NodeState {
  size: number
  has?: boolean
  throttling: boolean
  stats: { syncs: number; errors: number; bytesSent: number; bytesReceived: number; skipped: number }
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

  it('admits on B and C, in throttling mode, a client first seen on A, within two intervals', async () => {
    const [a, b, c] = nodes as [AppNode, AppNode, AppNode]
    const seenOnA = await a.send<{ kind: string }>({ op: 'admit', key: 'alice' })
    expect(seenOnA.kind).toBe('continue')
    const started = Date.now()
    // C brings the service past maxActive.
    await c.send({ op: 'add', prefix: 'crowd', count: 150 })
    for (const node of [b, c]) {
      const state = await until(() => node.state('alice'), {
        done: (s) => s.has === true && s.size > MAX_ACTIVE,
        timeout: 3000,
      })
      expect(state.has).toBe(true)
      expect(Date.now() - started).toBeLessThan(2 * INTERVAL + 200)
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
    const sizes = await until(async () => (await Promise.all(nodes.map((n) => n.state()))).map((s) => s.size), {
      done: (all) => all.every((size) => size > 6000) && spread(all) < 0.02,
      timeout: 4 * INTERVAL,
    })
    expect(spread(sizes)).toBeLessThan(0.02)
    expect(Math.abs(sizes[0]! - 6152) / 6152).toBeLessThan(0.05)
  })

  it('makes the same number of script calls per process per second at 100 and 10 000 requests per second', async () => {
    const calls = async (perSecond: number, tag: string) => {
      const before = parseCommandStats(await admin.info('commandstats'))
      const seconds = 1.8
      await Promise.all(
        nodes.map((n, i) => n.send({ op: 'load', count: perSecond * seconds, ms: seconds * 1000, tag: `${tag}${i}` })),
      )
      const ran = commandsBetween(before, parseCommandStats(await admin.info('commandstats')))
      return ((ran.evalsha ?? 0) + (ran.eval ?? 0)) / nodes.length / seconds
    }
    const slow = await calls(100, 'slow')
    const fast = await calls(10_000, 'fast')
    // One call per interval: 1000 / 300 ≈ 3.3 per second, whatever the traffic.
    expect(slow).toBeGreaterThan(2.5)
    expect(slow).toBeLessThan(4)
    expect(Math.abs(fast - slow)).toBeLessThanOrEqual(0.6)
  })

  it('serves requests without waiting while Redis is down, and converges once it is back', async () => {
    const [a, b, c] = nodes as [AppNode, AppNode, AppNode]
    const port = server.port
    await server.stop()
    const during = await a.send<{ kind: string; ms: number }>({ op: 'admit', key: 'alice' })
    expect(during).toMatchObject({ kind: 'continue' })
    expect(during.ms).toBeLessThan(50)
    // Recorded on A only while Redis is away.
    await a.send({ op: 'add', prefix: 'outage-alice', count: 1 })
    await a.send({ op: 'add', prefix: 'outage-a', count: 500 })
    await c.send({ op: 'add', prefix: 'outage-c', count: 500 })
    const { slowest } = await b.send<{ slowest: number }>({ op: 'load', count: 200, ms: 2 * INTERVAL, tag: 'down' })
    expect(slowest).toBeLessThan(50)
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
    for (const state of states) expect(state.stats.errors).toBeGreaterThan(0)
    for (const node of nodes) {
      const closed = await node.send<{ unhandled: string[] }>({ op: 'close' })
      expect(closed.unhandled).toEqual([])
    }
  }, 30_000)
})
