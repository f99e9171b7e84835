// RedisActiveClientsSync in one process on a private redis-server, per client library, and on a
// Cluster: what a sync sends and reads, on an injected clock. Across processes: active-clients-sync.test.ts.
import { ActiveClients, ConfigError, type SyncEvent } from '@sluice/core'
import { RedisActiveClientsSync } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import {
  privateRedisAvailable,
  type RedisCluster,
  type RedisServer,
  startCluster,
  startRedisServer,
} from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'

const available = await privateRedisAvailable()

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
    // Ten positions in 143,808 bits: gaps of about 14,000, two LEB128 bytes each (a u32 took four).
    const one = gapBytes(setBits(a.clients.exportSlot(a.clients.currentSlot()) as Uint8Array))
    expect(a.sync.stats.bytesSent - base).toBe(one)
    expect(one).toBeLessThanOrEqual(3 * a.clients.hashes)
    expect(a.sync.stats.positionsSent).toBe(a.clients.hashes)
    await a.sync.syncNow()
    expect(a.sync.stats.bytesSent - base).toBe(one)
    for (let i = 0; i < 5000; i++) a.clients.add(`many-${i}`)
    await a.sync.syncNow()
    expect(a.sync.stats.bytesSent - base).toBe(one + a.clients.bits / 8)
    await b.sync.syncNow()
    expect(b.clients.has('one')).toBe(true)
    expect(b.clients.has('many-4999')).toBe(true)
    expect(Math.round(b.clients.size())).toBe(Math.round(a.clients.size()))
    // Nothing new anywhere: nothing comes back either.
    const received = a.sync.stats.bytesReceived
    await a.sync.syncNow()
    expect(a.sync.stats.bytesReceived).toBe(received)
  })

  it('decodes every gap size: a peer’s slot ends up bit for bit the sender’s', async () => {
    const clock = { now: T0 }
    // Dense: 50 clients' 500 positions in 143,808 bits (561 is where whole slots start), a third
    // of the gaps below 128 (one byte).
    const [a, b] = pair('gaps-dense', clock)
    for (let i = 0; i < 50; i++) a.clients.add(`dense-${i}`)
    await a.sync.syncNow()
    expect(a.sync.stats.positionsSent).toBeGreaterThan(450)
    expect(a.sync.stats.bytesSent).toBeLessThan(2 * a.sync.stats.positionsSent)
    await b.sync.syncNow()
    const slot = a.clients.currentSlot()
    expect(firstDifference(b.clients.exportSlot(slot), a.clients.exportSlot(slot))).toBe(-1)
    // Sparse: one client in a 4.3M-bit filter, gaps of 3 and 4 bytes.
    const wide = [0, 1].map(() => {
      const clients = new ActiveClients({ capacity: 300_000, slots: 2, now: () => clock.now })
      const sync = new RedisActiveClientsSync({ client: connected.client, name: 'gaps-sparse', interval: 60_000 })
      sync.attach(clients)
      return { clients, sync }
    }) as [typeof a, typeof a]
    wide[0].clients.add('sparse')
    await wide[0].sync.syncNow()
    await wide[1].sync.syncNow()
    expect(wide[1].clients.has('sparse')).toBe(true)
    const wideSlot = wide[0].clients.currentSlot()
    expect(firstDifference(wide[1].clients.exportSlot(wideSlot), wide[0].clients.exportSlot(wideSlot))).toBe(-1)
    await Promise.all(wide.map((node) => node.sync.close()))
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

/** The set bits of a slot (Redis's order: bit 0 is the high bit of byte 0), ascending. */
function setBits(slot: Uint8Array): number[] {
  const bits: number[] = []
  for (let i = 0; i < slot.length * 8; i++) if (((slot[i >>> 3] as number) & (0x80 >>> (i & 7))) !== 0) bits.push(i)
  return bits
}

/** Bytes of ascending positions as LEB128 gaps (each less 1 from the one before; the first from -1). */
function gapBytes(positions: number[]): number {
  let bytes = 0
  let previous = -1
  for (const position of positions) {
    for (let gap = position - previous - 1; gap >= 128; gap = Math.floor(gap / 128)) bytes++
    bytes++
    previous = position
  }
  return bytes
}

/** The first byte at which two slots differ, -1 when equal (a deep toEqual takes seconds on 540 kB). */
function firstDifference(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (a === undefined || b === undefined || a.length !== b.length) return 0
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i
  return -1
}
