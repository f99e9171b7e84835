import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  commandsBetween,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
  uniquePrefix,
} from '../support/redis.js'
import { runFleet, startWorker } from './fleet.js'
import type { WorkerPlan } from './plan.js'

/**
 * Leased token bucket and GCRA in real processes on a private redis-server (its INFO commandstats
 * counts every script call): cheap far under the rate, within burst + rate × time on a hot key,
 * and a node killed holding a grant loses at most that grant (packages/redis/README.md, "Token
 * bucket and GCRA: leasing").
 */
const available = await privateRedisAvailable()
/** A tenth of the burst: the most a node holds of a policy (MAX_GRANT_SHARE). */
const MAX_GRANT_SHARE = 0.1

describe.skipIf(!available)('SyncedStore leasing: several processes', () => {
  let server: RedisServer
  let admin: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    admin = new Redis(server.url)
  })
  afterAll(async () => {
    admin?.disconnect()
    await server?.stop()
  })

  const plan = (nodeId: string, fields: Partial<WorkerPlan>): WorkerPlan => ({
    url: server.url,
    prefix: 'unset',
    nodeId,
    interval: 100,
    algorithm: 'token-bucket',
    limit: 100,
    window: 1000,
    rates: {},
    duration: 2000,
    seed: 1,
    ...fields,
  })

  const scriptCalls = (ran: Record<string, number>) => (ran.evalsha ?? 0) + (ran.eval ?? 0)

  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    it(`${algorithm}: 100 keys far under their rate on 2 nodes cost at most 0.02 script calls per decision`, async () => {
      const prefix = uniquePrefix(`lease-cool-${algorithm}`)
      // Each key: 1000 a second allowed, 2 × 20 offered.
      const plans = [0, 1].map((i) =>
        plan(`p${i}`, { prefix, algorithm, limit: 1000, keys: 100, rates: { spread: 2000 }, seed: 1 + 37 * i }),
      )
      const before = parseCommandStats(await admin.info('commandstats'))
      const results = await runFleet(plans)
      const ran = commandsBetween(before, parseCommandStats(await admin.info('commandstats')))
      const decisions = results.reduce((sum, r) => sum + (r.offered.spread ?? 0), 0)
      const admitted = results.reduce((sum, r) => sum + (r.admitted.spread ?? 0), 0)
      const perDecision = scriptCalls(ran) / decisions
      console.log(
        `${algorithm} cool: ${decisions} decisions, ${scriptCalls(ran)} script calls (${perDecision.toFixed(4)} per decision)`,
      )
      for (const r of results) expect(r.unhandled).toEqual([])
      expect(admitted).toBe(decisions)
      expect(perDecision).toBeLessThanOrEqual(0.02)
    })
  }

  const hot: [number, 'token-bucket' | 'gcra'][] = [
    [2, 'token-bucket'],
    [4, 'gcra'],
  ]
  for (const [processes, algorithm] of hot) {
    it(`${algorithm}, ${processes} processes, one hot key at 2× its rate: within 90–105 % of burst + rate × time`, async () => {
      const prefix = uniquePrefix(`lease-hot-${algorithm}`)
      const limit = 100
      const duration = 2500
      const plans = Array.from({ length: processes }, (_, i) =>
        plan(`p${i}`, { prefix, algorithm, limit, duration, rates: { hot: (2 * limit) / processes }, seed: 1 + i }),
      )
      const results = await runFleet(plans)
      const admitted = results.reduce((sum, r) => sum + (r.admitted.hot ?? 0), 0)
      const offered = results.reduce((sum, r) => sum + (r.offered.hot ?? 0), 0)
      // A full bucket (burst = limit) and the rate over the run.
      const bound = limit + (limit * duration) / 1000
      console.log(`${algorithm} ×${processes} hot: offered ${offered}, admitted ${admitted}, bound ${bound}`)
      for (const r of results) expect(r.unhandled).toEqual([])
      expect(admitted).toBeLessThanOrEqual(bound * 1.05)
      expect(admitted).toBeGreaterThanOrEqual(bound * 0.9)
    }, 30_000)
  }

  it('a node killed while holding a grant: the survivor admits burst + rate × time less at most that grant', async () => {
    const prefix = uniquePrefix('lease-kill')
    const limit = 100
    // The victim, alone at half the rate, holds about a tenth of the burst when killed at 1 s.
    const victim = await startWorker(
      plan('victim', { prefix, limit, duration: 5000, rates: { hot: limit / 2 }, progress: true }),
    )
    // The survivor starts as the victim dies and offers 2× the rate for 2 s.
    const survivorDuration = 2000
    const survivor = await startWorker(
      plan('survivor', { prefix, limit, duration: survivorDuration, rates: { hot: 2 * limit }, delay: 1000 }),
    )
    let lastProgress = 0
    victim.child.stdout?.on('data', (data: Buffer) => {
      const lines = data
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('{"progress"'))
      const last = lines.at(-1)
      if (last !== undefined) lastProgress = (JSON.parse(last) as { progress: { hot?: number } }).progress.hot ?? 0
    })
    for (const { child } of [victim, survivor]) child.stdin?.write('go\n')
    await new Promise((r) => setTimeout(r, 1000))
    victim.child.kill('SIGKILL')
    const result = await survivor.done
    const admitted = result.admitted.hot ?? 0
    // The bucket was full when the survivor began, less what the victim held; it refills at the rate.
    const exact = limit + (limit * survivorDuration) / 1000
    const lost = Math.max(1, Math.floor(limit * MAX_GRANT_SHARE))
    console.log(`kill: victim admitted ≥ ${lastProgress} before the kill; survivor admitted ${admitted} of ${exact}`)
    expect(result.unhandled).toEqual([])
    expect(lastProgress).toBeGreaterThan(0)
    expect(admitted).toBeLessThanOrEqual(exact * 1.05)
    expect(admitted).toBeGreaterThanOrEqual((exact - lost) * 0.95)
  }, 30_000)
})
