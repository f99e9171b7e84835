import { parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { type CardinalityWorker, countCommands, startCardinalityWorker } from './cardinality.js'

const available = await privateRedisAvailable()

describe.skipIf(!available)('SyncedStore at real cardinality: Redis work follows change, not keys seen', () => {
  let server: RedisServer
  let client: Redis
  const workers: CardinalityWorker[] = []
  beforeAll(async () => {
    server = await startRedisServer()
    client = new Redis(server.url)
  }, 20_000)
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()))
    client?.disconnect()
    await server?.stop()
  })
  const start = async (store: 'redis' | 'synced', prefix: string, algorithm?: 'token-bucket') => {
    const worker = await startCardinalityWorker({
      url: server.url,
      store,
      prefix,
      limit: 1000,
      window: 3_600_000,
      interval: 100,
      ...(algorithm === undefined ? {} : { algorithm }),
    })
    workers.push(worker)
    return worker
  }

  it('idle after 20 000 keys under 1000/1h: at most 200 Redis commands in 2 s, and under 2 % of a CPU', async () => {
    const worker = await start('synced', 'idle:')
    await worker.ask({ see: 20_000 })
    expect(await client.dbsize()).toBeGreaterThanOrEqual(20_000) // every key reached Redis
    let cpuMs = 0
    const ran = await countCommands(client, async () => {
      cpuMs = (await worker.ask<{ cpuMs: number }>({ idle: 2000 })).cpuMs
    })
    console.log(`idle 2 s after 20 000 keys: ${ran.commands} commands (${JSON.stringify(ran.byName)}), ${cpuMs} ms CPU`)
    expect(ran.commands).toBeLessThanOrEqual(200)
    // CPU time, not wall-clock share: a loaded machine stretches neither.
    expect(cpuMs).toBeLessThan(0.02 * 2000)
  }, 60_000)

  it('idle after 20 000 leased token-bucket keys: every grant goes back once, then at most 200 commands in 2 s', async () => {
    const worker = await start('synced', 'idle-bucket:', 'token-bucket')
    await worker.ask({ see: 20_000 })
    const set = parsePolicies({ limit: 1000, window: 3_600_000, algorithm: 'token-bucket' })
    const peek = () => new RedisStore({ client, prefix: 'idle-bucket:' }).peek('k0', set)
    // Leases idle for 10 syncs give back what they hold (each key's 1 spent stays spent) and are forgotten.
    const givingBack = await countCommands(client, () => worker.ask({ idle: 1500 }))
    expect(givingBack.scripts).toBeGreaterThan(0)
    expect((await peek())[0]?.remaining).toBeGreaterThanOrEqual(999)
    let cpuMs = 0
    const ran = await countCommands(client, async () => {
      cpuMs = (await worker.ask<{ cpuMs: number }>({ idle: 2000 })).cpuMs
    })
    console.log(
      `idle 2 s after 20 000 leased keys (and ${givingBack.commands} commands giving back): ${ran.commands} commands (${JSON.stringify(ran.byName)}), ${cpuMs} ms CPU`,
    )
    expect(ran.commands).toBeLessThanOrEqual(200)
    expect(cpuMs).toBeLessThan(0.02 * 2000)
  }, 60_000)

  it('2 000 cool keys at 3 requests a second each for 3 s: at most half the commands of RedisStore, 1/20 of its script calls', async () => {
    const traffic = { traffic: { keys: 2000, perKeyPerSecond: 3, seconds: 3 } }
    type Answer = { admitted: number; offered: number }
    const answers: Answer[] = []
    const redis = await start('redis', 'cool-redis:')
    const byRedis = await countCommands(client, async () => answers.push(await redis.ask<Answer>(traffic)))
    const synced = await start('synced', 'cool-synced:')
    const bySynced = await countCommands(client, async () => answers.push(await synced.ask<Answer>(traffic)))
    console.log(
      `2 000 keys × 3/s × 3 s: RedisStore ${byRedis.commands} commands, ${byRedis.scripts} scripts; SyncedStore ${bySynced.commands} commands, ${bySynced.scripts} scripts (${JSON.stringify(bySynced.byName)})`,
    )
    // The traffic really ran, all of it admitted (9 of 1000 per key), on both stores.
    expect(answers).toEqual([
      { admitted: 18_000, offered: 18_000, cpuMs: expect.any(Number) },
      { admitted: 18_000, offered: 18_000, cpuMs: expect.any(Number) },
    ])
    expect(bySynced.commands).toBeLessThanOrEqual(byRedis.commands / 2)
    expect(bySynced.scripts).toBeLessThanOrEqual(byRedis.scripts / 20)
  }, 60_000)

  it('1 000 such keys shared by 4 processes for 4 s (each sees a quarter of their traffic): still at most half the commands of RedisStore', async () => {
    // Each process offers every key 0.75 a second: held 1 s on each node, nearly every request was a sync of its own (0.75×).
    const traffic = { traffic: { keys: 1000, perKeyPerSecond: 0.75, seconds: 4 } }
    const run = async (store: 'redis' | 'synced') => {
      const fleet = await Promise.all([0, 1, 2, 3].map(() => start(store, `shared-${store}:`)))
      const answers: { admitted: number }[] = []
      const ran = await countCommands(client, () =>
        Promise.all(fleet.map(async (w) => answers.push(await w.ask<{ admitted: number }>(traffic)))),
      )
      expect(answers.map((a) => a.admitted)).toEqual([3000, 3000, 3000, 3000])
      return ran
    }
    const byRedis = await run('redis')
    const bySynced = await run('synced')
    console.log(
      `1 000 keys × 3/s × 4 s over 4 processes: RedisStore ${byRedis.commands} commands; SyncedStore ${bySynced.commands} (${JSON.stringify(bySynced.byName)})`,
    )
    expect(bySynced.commands).toBeLessThanOrEqual(byRedis.commands / 2)
  }, 60_000)
})
