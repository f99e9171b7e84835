// RedisActiveClientsSync across three OS processes on a private redis-server (so commands can be
// counted, and the server stopped and restarted), plus the script's behaviour in-process.
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { ActiveClients, ConfigError, type SyncEvent } from '@sluice/core'
import { RedisActiveClientsSync } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import { CLIENTS, type TestClient } from '../support/clients.js'
import {
  commandsBetween,
  parseCommandStats,
  privateRedisAvailable,
  type RedisCluster,
  type RedisServer,
  startCluster,
  startRedisServer,
} from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'

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

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await read()
    if (ok(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
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
      const state = await until(
        () => node.state('alice'),
        (s) => s.has === true && s.size > MAX_ACTIVE,
        3000,
      )
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
    const sizes = await until(
      async () => (await Promise.all(nodes.map((n) => n.state()))).map((s) => s.size),
      (all) => all.every((size) => size > 6000) && spread(all) < 0.02,
      4 * INTERVAL,
    )
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
    const states = await until(
      async () => Promise.all(nodes.map((n) => n.state('outage-alice-0'))),
      (all) => all.every((s) => s.has) && spread(all.map((s) => s.size)) < 0.02,
      10_000,
    )
    expect(states.map((s) => s.has)).toEqual([true, true, true])
    expect(spread(states.map((s) => s.size))).toBeLessThan(0.02)
    for (const state of states) expect(state.stats.errors).toBeGreaterThan(0)
    for (const node of nodes) {
      const closed = await node.send<{ unhandled: string[] }>({ op: 'close' })
      expect(closed.unhandled).toEqual([])
    }
  }, 30_000)
})

describe.skipIf(!available).each(CLIENTS)('RedisActiveClientsSync in one process, $name', (kind) => {
  let server: RedisServer
  /** ioredis, to inspect keys; the syncs use `connected`, of the library under test. */
  let redis: Redis
  let connected: TestClient
  const watcher = unhandledRejections()

  beforeAll(async () => {
    server = await startRedisServer()
    redis = new Redis(server.url)
    connected = await kind.single(server.port)
  })
  afterAll(async () => {
    redis?.disconnect()
    connected?.close()
    await server?.stop()
  })

  const T0 = 1_800_000_000_000
  const pair = (name: string, clock: { now: number }) =>
    [0, 1].map(() => {
      const clients = new ActiveClients({ capacity: 10_000, now: () => clock.now })
      const sync = new RedisActiveClientsSync({ client: connected.client, name, interval: 60_000 })
      sync.attach(clients)
      return { clients, sync }
    }) as [
      { clients: ActiveClients; sync: RedisActiveClientsSync },
      { clients: ActiveClients; sync: RedisActiveClientsSync },
    ]

  it('sends new bit positions, then only what changed, and whole slots when smaller', async () => {
    const clock = { now: T0 }
    const [a, b] = pair('bytes', clock)
    await a.sync.syncNow()
    const base = a.sync.stats.bytesSent
    a.clients.add('one')
    await a.sync.syncNow()
    expect(a.sync.stats.bytesSent - base).toBe(4 * a.clients.hashes)
    await a.sync.syncNow()
    expect(a.sync.stats.bytesSent - base).toBe(4 * a.clients.hashes)
    for (let i = 0; i < 5000; i++) a.clients.add(`many-${i}`)
    await a.sync.syncNow()
    expect(a.sync.stats.bytesSent - base).toBe(4 * a.clients.hashes + a.clients.bits / 8)
    await b.sync.syncNow()
    expect(b.clients.has('one')).toBe(true)
    expect(b.clients.has('many-4999')).toBe(true)
    expect(Math.round(b.clients.size())).toBe(Math.round(a.clients.size()))
    // Nothing new anywhere: nothing comes back either.
    const received = a.sync.stats.bytesReceived
    await a.sync.syncNow()
    expect(a.sync.stats.bytesReceived).toBe(received)
  })

  it('reads the previous slot after rotating, and keys expire one window after their last write', async () => {
    const clock = { now: T0 }
    const [a, b] = pair('rotate', clock)
    await Promise.all([a.sync.syncNow(), b.sync.syncNow()])
    a.clients.add('late-in-slot')
    clock.now += 60_000
    await a.sync.syncNow()
    await b.sync.syncNow()
    expect(b.clients.has('late-in-slot')).toBe(true)
    const keys = await redis.keys('sluice:active:{rotate}:*')
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(30 * 60_000)
    expect(keys.length).toBeGreaterThan(0)
  })

  it('resends its whole window when Redis comes back empty', async () => {
    const clock = { now: T0 }
    const [a, b] = pair('epoch', clock)
    a.clients.add('before')
    await a.sync.syncNow()
    await redis.del(...(await redis.keys('sluice:active:{epoch}:*')))
    await a.sync.syncNow() // sees a new epoch: the next sync sends everything
    await a.sync.syncNow()
    await b.sync.syncNow()
    expect(b.clients.has('before')).toBe(true)
  })

  it('reports each sync to observe, failures included, with no unhandled rejection', async () => {
    watcher.watch()
    const events: SyncEvent[] = []
    const dead = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    dead.on('error', () => {})
    const clients = new ActiveClients({ capacity: 100 })
    const sync = new RedisActiveClientsSync({
      client: dead,
      interval: 50,
      observe: (e) => void (e.type === 'sync' && events.push(e)),
    })
    sync.attach(clients)
    clients.add('x')
    await new Promise((resolve) => setTimeout(resolve, 200))
    await sync.close()
    dead.disconnect()
    watcher.unwatch()
    expect(events.length).toBeGreaterThan(1)
    expect(events[0]).toMatchObject({ type: 'sync', store: 'active-clients', keys: expect.any(Number) })
    expect(events[0]?.error).toBeInstanceOf(Error)
    expect(sync.stats.errors).toBe(events.length)
    expect(watcher.seen).toEqual([])
  })

  it.each<[Record<string, unknown>, string]>([
    [{ client: undefined }, 'client'],
    [{ client: {} }, 'client'],
    [{ prefix: 'a{b' }, 'prefix'],
    [{ name: '' }, 'name'],
    [{ interval: 0 }, 'interval'],
    [{ observe: 1 }, 'observe'],
  ])('rejects %j naming %s', (options, field) => {
    const build = () => new RedisActiveClientsSync({ client: redis, ...options } as never)
    expect(build).toThrow(ConfigError)
    expect(build).toThrow(expect.objectContaining({ field }))
  })
})

describe.skipIf(!available)('RedisActiveClientsSync on a 3-master Cluster', () => {
  let cluster: RedisCluster
  beforeAll(async () => {
    cluster = await startCluster()
  }, 30_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it.each(CLIENTS)(
    'keeps every key of a limiter in one slot, so the script runs on any shard (EVAL on NOSCRIPT): $name',
    async (kind) => {
      const { client, close } = await kind.cluster(cluster.nodes)
      const [a, b] = [0, 1].map(() => {
        const clients = new ActiveClients({ capacity: 1000 })
        const sync = new RedisActiveClientsSync({ client, name: `cluster-game-${kind.name}`, interval: 60_000 })
        sync.attach(clients)
        return { clients, sync }
      }) as [
        { clients: ActiveClients; sync: RedisActiveClientsSync },
        { clients: ActiveClients; sync: RedisActiveClientsSync },
      ]
      a.clients.add('on-a')
      await a.sync.syncNow()
      await b.sync.syncNow()
      expect(a.sync.stats.errors + b.sync.stats.errors).toBe(0)
      expect(b.clients.has('on-a')).toBe(true)
      close()
    },
  )
})
