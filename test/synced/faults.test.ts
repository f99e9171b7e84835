import { parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { SyncedStore } from '@sluice/redis'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS } from '../support/clients.js'
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
import { sleep } from '../support/wait.js'
import { countsInRedis, runFleet, startWorker } from './fleet.js'
import type { WorkerPlan } from './plan.js'

const available = await privateRedisAvailable()

describe.skipIf(!available)('SyncedStore on a private Redis: command counts, crashes, restarts', () => {
  let server: RedisServer
  let client: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    client = new Redis(server.url)
  }, 20_000)
  afterAll(async () => {
    client?.disconnect()
    await server?.stop()
  })

  const plan = (over: Partial<WorkerPlan>): WorkerPlan => ({
    url: server.url,
    prefix: 'counted:',
    nodeId: 'p0',
    interval: 100,
    algorithm: 'fixed-window',
    limit: 100_000,
    window: 60_000,
    rates: { spread: 100 },
    duration: 2000,
    seed: 1,
    ...over,
  })

  it('script calls per process stay ≤ (1000 / interval + 1) per second + a constant, the same at two rates 10× apart (keys under half their limit)', async () => {
    const perProcess: number[] = []
    for (const rate of [100, 1000]) {
      await client.config('RESETSTAT')
      const before = parseCommandStats(await client.info('commandstats'))
      const plans = [0, 1].map((i) =>
        plan({ prefix: `counted-${rate}:`, nodeId: `p${i}`, rates: { spread: rate }, seed: 1 + i }),
      )
      const results = await runFleet(plans)
      const ran = commandsBetween(before, parseCommandStats(await client.info('commandstats')))
      const scripts = (ran.evalsha ?? 0) + (ran.eval ?? 0)
      perProcess.push(scripts / 2)
      const admitted = results.reduce((sum, r) => sum + (r.admitted.spread ?? 0), 0)
      expect(admitted).toBe(results.reduce((sum, r) => sum + (r.offered.spread ?? 0), 0))
      console.log(`${rate}/s per process: ${JSON.stringify(ran)}, ${perProcess.at(-1)} script calls per process`)
    }
    // Per second of load: 10 syncs and a heartbeat. Once per process (12): the sync at the first
    // decision, 3 discovery heartbeats, the syncs of the worker's 300 ms wait before close, close()'s
    // flush and leave, and timer jitter.
    const seconds = 2
    for (const calls of perProcess) expect(calls).toBeLessThanOrEqual(seconds * (1000 / 100 + 1) + 12)
    // Ten times the traffic, no more calls. A busy process fires fewer timer ticks, so the higher
    // rate may make fewer calls; more than a few ticks' jitter above the lower rate would be growth.
    expect(perProcess[1] as number).toBeLessThanOrEqual((perProcess[0] as number) + 4)
  }, 60_000)

  it('a process killed mid-window loses at most what it had not sent (one interval of its traffic)', async () => {
    let progress = 0
    const { child, done } = await startWorker(
      plan({ prefix: 'killed:', rates: { hot: 500 }, duration: 10_000, progress: true }),
      (line) => {
        const parsed = JSON.parse(line) as { progress?: { hot?: number } }
        progress = parsed.progress?.hot ?? progress
      },
    )
    child.stdin?.write('go\n')
    await sleep(1200)
    child.kill('SIGKILL')
    await done.catch(() => undefined)
    const counts = await countsInRedis(client, 'killed:')
    const inRedis = [...counts.values()].flatMap((m) => [...m.values()]).reduce((a, b) => a + b, 0)
    expect(progress).toBeGreaterThan(300)
    // At most one interval (100 ms) plus a sync's round trip of 500/s unsent; never more than admitted.
    expect(progress - inRedis).toBeLessThanOrEqual(500 * 0.2)
    expect(inRedis).toBeLessThanOrEqual(progress + 500 * 0.02)
  }, 30_000)

  it('Redis stopped for 5 s and started again: no decision waited, every admitted request counted, no unhandled rejection', async () => {
    const rejections = unhandledRejections()
    rejections.watch()
    const own = await startRedisServer()
    const ownClient = new Redis(own.url)
    ownClient.on('error', () => {})
    const store = new SyncedStore({ client: ownClient, prefix: 'restart:', interval: 100 })
    const window = 600_000
    const set = parsePolicies({ limit: 100_000, window, algorithm: 'fixed-window' })
    // A window that ends while the test runs (real clock) is not sent again once it has ended, so
    // a restart loses what it held (no decision reads it any more): start well inside one.
    const left = window - (Date.now() % window)
    if (left < 20_000) await sleep(left + 100)
    let admitted = 0
    let waited = 0
    let restarted: RedisServer | undefined
    // A new store's first decisions read the hot keys (Redis answering): those are not the outage's.
    // Once a sync has heard the keys in their window, no decision on them reads again.
    for (const answer of await Promise.all([0, 1].map((i) => store.consume(`k${i}`, set, 1)))) {
      if (answer.every((o) => o.allowed)) admitted++
    }
    await store.flush()
    const timer = setInterval(() => {
      for (let i = 0; i < 2; i++) {
        const answer = store.consume(`k${i}`, set, 1)
        if (!Array.isArray(answer)) waited++
        else if (answer.every((o) => o.allowed)) admitted++
      }
    }, 10)
    try {
      await sleep(1000)
      await own.stop()
      await sleep(5000)
      restarted = await startRedisServer({ port: own.port })
      // The client reconnects on its own backoff, slower on a loaded machine: the 2 s of traffic
      // that follow are with Redis reachable again, when the syncs send the lost windows back.
      const down = Date.now()
      while (ownClient.status !== 'ready' && Date.now() - down < 10_000) await sleep(20)
      expect(ownClient.status).toBe('ready')
      await sleep(2000)
      clearInterval(timer)
      const closing = Date.now()
      await store.close()
      expect(Date.now() - closing).toBeLessThan(5000)
      expect(waited).toBe(0)
      expect(admitted).toBeGreaterThan(500)
      const counts = await countsInRedis(ownClient, 'restart:')
      const inRedis = [...counts.values()].flatMap((m) => [...m.values()]).reduce((a, b) => a + b, 0)
      // The restarted server is empty: the nodes' running totals brought every count back.
      expect(inRedis).toBe(admitted)
      expect(rejections.seen).toEqual([])
    } finally {
      clearInterval(timer)
      rejections.unwatch()
      ownClient.disconnect()
      await restarted?.stop()
    }
  }, 50_000)
  it('Redis restarted empty mid-window: every node sends its window again, exact admissions too; the hot key stays within 105 % of its limit', async () => {
    const own = await startRedisServer()
    const clients = [0, 1].map(() => {
      const c = new Redis(own.url, { enableOfflineQueue: false })
      c.on('error', () => {})
      return c
    })
    const stores = clients.map((c, i) => new SyncedStore({ client: c, prefix: 'restart-hot:', nodeId: `n${i}` }))
    const limit = 200
    const set = parsePolicies({ limit, window: 10_000, algorithm: 'sliding-window' })
    // Start early in a sub-window, and offer nothing after 9.5 s: every admission is then inside the
    // first 10 s window (a restart that is slow on a loaded machine would otherwise stretch the run
    // into the next window, where the sliding window rightly admits again as the first sub-window leaves).
    if (Date.now() % 1000 > 100) await sleep(1000 - (Date.now() % 1000))
    let admitted = 0
    let offered = 0
    const started = Date.now()
    const offerUntil = started + 9_500
    const timer = setInterval(() => {
      // 80 a second over both nodes: the limit is reached within 3 s.
      for (; offered < ((Math.min(Date.now(), offerUntil) - started) * 80) / 1000; offered++) {
        const answer = (stores[offered % 2] as SyncedStore).consume('hot', set, 1)
        if (Array.isArray(answer)) admitted += answer.every((o) => o.allowed) ? 1 : 0
        else
          void (answer as Promise<readonly Outcome[]>).then(
            (outcomes) => (admitted += outcomes.every((o) => o.allowed) ? 1 : 0),
          )
      }
    }, 10)
    let restarted: RedisServer | undefined
    try {
      await sleep(3500)
      const before = admitted
      await own.stop()
      const stopped = Date.now()
      await sleep(1000)
      restarted = await startRedisServer({ port: own.port })
      const down = Date.now() - stopped
      await sleep(Math.max(0, Math.min(3500, offerUntil - Date.now())))
      clearInterval(timer)
      await sleep(300) // exact decisions in flight
      console.log(
        `restart of an empty Redis: ${before} admitted before, ${admitted} in all, of ${offered} offered; down ${down} ms, offered until ${Math.min(Date.now(), offerUntil) - started} ms`,
      )
      expect(before).toBeGreaterThanOrEqual(limit * 0.95)
      expect(admitted).toBeLessThanOrEqual(limit * 1.05)
      // Redis has the window back: both nodes' counts, those of exact decisions included.
      await Promise.all(stores.map((s) => s.flush()))
      const inRedis = await countsInRedis(clients[0] as Redis, 'restart-hot:')
      const sum = [...inRedis.values()].flatMap((m) => [...m.values()]).reduce((a, b) => a + b, 0)
      expect(sum).toBeGreaterThanOrEqual(admitted)
    } finally {
      clearInterval(timer)
      await Promise.all(stores.map((s) => s.close()))
      for (const c of clients) c.disconnect()
      await restarted?.stop()
    }
  }, 40_000)
})

describe.skipIf(!available)('SyncedStore on a 3-master Cluster', () => {
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

  it.each(CLIENTS)(
    'syncs keys spread over every master (one call per slot), and the nodes see each other’s counts: $name',
    async (kind) => {
      const T = 1_700_000_000_000
      const store = await kind.cluster(cluster.nodes)
      const prefix = `c-${kind.name}:`
      const [a, b] = [0, 1].map(
        (i) => new SyncedStore({ client: store.client, prefix, nodeId: `n${i}`, now: () => T, exactAbove: 1 }),
      ) as [SyncedStore, SyncedStore]
      const set = parsePolicies({ limit: 10, window: 60_000, algorithm: 'fixed-window' })
      const keys = Array.from({ length: 60 }, (_, i) => `client-${i}`)
      for (const key of keys) for (let i = 0; i < 3; i++) await a.consume(key, set, 1)
      for (const key of keys) await b.consume(key, set, 1)
      await a.flush()
      await b.flush()
      // A sync brings back the keys decided here since the last one: a decides each key once more.
      for (const key of keys) await a.consume(key, set, 1)
      await a.flush()
      for (const key of keys) expect((await a.peek(key, set))[0]?.remaining).toBe(5)
      const perMaster = await Promise.all(client.nodes('master').map((node) => node.keys(`${prefix}*:s:*`)))
      for (const found of perMaster) expect(found.length).toBeGreaterThan(5)
      expect(perMaster.flat()).toHaveLength(keys.length)
      await Promise.all([a.close(), b.close()])
      store.close()
    },
  )
})
