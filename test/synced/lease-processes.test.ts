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
/** The default cap, a tenth of the burst: the most the fleet's grants hold of a policy (lease.ts, DEFAULT_LEASE_SIZING). */
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

  // The default sizes, and seed 001's pre-allocation of half of each burst (the cap raised to hold it).
  const sizes: [string, WorkerPlan['lease'], number][] = [
    ['default sizes', undefined, MAX_GRANT_SHARE],
    ['allocation 0.5', { allocation: 0.5, cap: 0.5 }, 0.5],
  ]
  for (const [name, lease, cap] of sizes) {
    it(`${name}: a node killed while holding a grant: the fleet loses at most the cap, and counts nothing twice`, async () => {
      const prefix = uniquePrefix('lease-kill')
      // 100 an hour, burst 100: over the 2.5 s run the bucket refills by 0.07 units, so what the
      // fleet admits is what the burst held, less what the killed node held unspent.
      const limit = 100
      const window = 3_600_000
      // Both processes start loading at once; each waits for "go". The survivor starts offering as
      // the victim dies and asks for three times what is left.
      const [victim, survivor] = await Promise.all([
        startWorker(
          plan('victim', { prefix, limit, window, duration: 5000, rates: { hot: 20 }, progress: true, lease }),
        ),
        startWorker(
          plan('survivor', { prefix, limit, window, duration: 1500, rates: { hot: 200 }, delay: 1000, lease }),
        ),
      ])
      let victimAdmitted = 0
      victim.child.stdout?.on('data', (data: Buffer) => {
        const lines = data
          .toString()
          .split('\n')
          .filter((l) => l.startsWith('{"progress"'))
        const last = lines.at(-1)
        if (last !== undefined) victimAdmitted = (JSON.parse(last) as { progress: { hot?: number } }).progress.hot ?? 0
      })
      for (const { child } of [victim, survivor]) child.stdin?.write('go\n')
      await new Promise((r) => setTimeout(r, 1000))
      victim.child.kill('SIGKILL')
      const result = await survivor.done
      const survivorAdmitted = result.admitted.hot ?? 0
      // Admissions the victim made after its last progress line came from its grant too: they count as lost here.
      const lost = limit - victimAdmitted - survivorAdmitted
      // Before the victim has seen the survivor's heartbeat, its part is the whole cap.
      const grant = Math.floor(limit * cap)
      console.log(
        `kill, ${name}: victim admitted ${victimAdmitted}, survivor ${survivorAdmitted}: ${lost} of ${limit} lost (cap ${grant})`,
      )
      expect(result.unhandled).toEqual([])
      expect(victimAdmitted).toBeGreaterThan(0)
      expect(lost).toBeGreaterThanOrEqual(0)
      expect(lost).toBeLessThanOrEqual(grant)
    }, 30_000)
  }
})
