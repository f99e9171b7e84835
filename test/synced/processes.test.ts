import { spawn } from 'node:child_process'
import { parsePolicies } from '@sluice/core'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer, uniquePrefix } from '../support/redis.js'
import { countOf, keepingHashes, runFleet, totalsInRedis } from './fleet.js'
import { type Phase, phaseOf, windowLoads } from './overshoot.js'
import type { Pattern, WorkerPlan } from './plan.js'

/**
 * Real processes on one Redis, 2× the limit offered: every window's global count (the per-node
 * totals in Redis, which the test first checks hold every admitted request) stays within the
 * documented bound (packages/redis/README.md, "SyncedStore: how far over"): 5 % on a hot key; for
 * keys whose traffic in two intervals is a large part of their limit (1000 keys at 10/s, the Zipf
 * mix at 20/s) at most 1× over, measured up to +80 % on this 2-core machine with every process
 * saturated. SLUICE_SYNCED_LONG=1 adds 10 s windows and more shapes (`pnpm test:synced-long`).
 */
const OVERSHOOT_BOUND: Record<Exclude<Pattern, 'flood'>, number> = { hot: 0.05, spread: 1, zipf: 1 }
/** The run's first window: a cold fleet whose nodes do not yet know each other's rates (README). */
const COLD_START_BOUND: Record<Exclude<Pattern, 'flood'>, number> = { hot: 0.05, spread: 1.5, zipf: 1.5 }
const available = await privateRedisAvailable()
const long = process.env.SLUICE_SYNCED_LONG === '1'

/** Per pattern: the limit per window (each of 1000 keys for spread and zipf). */
const LIMITS: Record<Exclude<Pattern, 'flood'>, number> = { hot: 200, spread: 10, zipf: 20 }
/** Per pattern: how many keys' limits the load is planned against (spread: every key; zipf: 100 keys' worth). */
const LOADED_KEYS: Record<Exclude<Pattern, 'flood'>, number> = { hot: 1, spread: 1000, zipf: 100 }
/**
 * Some requests must be denied once the fleet offered at least this many times the limit per
 * window. Below it (a starved machine's load generators fall behind) admitting all says nothing.
 */
const MUST_DENY_FROM = 1.5

// A server of its own: keepingHashes turns keyspace events on.
describe.skipIf(!available)('SyncedStore: several processes, 2× the limit offered', () => {
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

  /** Processes, algorithm, window, duration, and CPU-burning processes beside them (hot key only). */
  const scenarios: [number, WorkerPlan['algorithm'], number, number, number?][] = [
    [2, 'fixed-window', 1000, 2500],
    [4, 'sliding-window', 1000, 2500],
    // A loaded machine: late timers and replies on 2 cores with 7 busy processes.
    [4, 'fixed-window', 1000, 2500, 3],
    ...(long
      ? ([
          [4, 'fixed-window', 1000, 2500],
          [2, 'sliding-window', 1000, 5000],
          [2, 'fixed-window', 10_000, 25_000],
          [4, 'sliding-window', 10_000, 25_000],
        ] as [number, WorkerPlan['algorithm'], number, number][])
      : []),
  ]

  for (const [processes, algorithm, window, duration, burners = 0] of scenarios) {
    for (const pattern of ['hot', 'spread', 'zipf'] as const) {
      if (burners > 0 && pattern !== 'hot') continue
      const beside = burners > 0 ? ` beside ${burners} CPU burners` : ''
      it(`${processes} processes${beside}, ${algorithm} ${window} ms, ${pattern}: within limit × ${1 + OVERSHOOT_BOUND[pattern]}, nothing lost`, async () => {
        const prefix = uniquePrefix(`synced-${pattern}`)
        const limit = LIMITS[pattern]
        // 2× the limit in total: for spread every key gets twice its limit; for zipf the head is far over, the tail under.
        const total = (2 * limit * LOADED_KEYS[pattern] * 1000) / window
        const plans = Array.from(
          { length: processes },
          (_, i): WorkerPlan => ({
            url: server.url,
            prefix,
            nodeId: `p${i}`,
            interval: 100,
            algorithm,
            limit,
            window,
            rates: { [pattern]: total / processes },
            duration,
            seed: 1 + i * 7919,
            ...(process.env.SLUICE_EXACT_ABOVE ? { exactAbove: Number(process.env.SLUICE_EXACT_ABOVE) } : {}),
          }),
        )
        // Hashes expire 5 s after their window, and a starved fleet's run, flush and close take longer
        // (syncs 20 s apart were seen): every hash the run writes is kept, and read once, whole, after
        // the workers exit, so each field is its final value.
        const burning = Array.from({ length: burners }, () => spawn(process.execPath, ['-e', 'for (;;) {}']))
        const results = await keepingHashes(client, prefix, () =>
          runFleet(plans).finally(() => {
            for (const burner of burning) burner.kill('SIGKILL')
          }),
        )
        const totals = await totalsInRedis(client, prefix)
        const counts = new Map(
          [...totals].map(([tag, byStart]) => [tag, new Map([...byStart].map(([start, t]) => [start, countOf(t)]))]),
        )
        const admitted = results.reduce((sum, r) => sum + (r.admitted[pattern] ?? 0), 0)
        const offered = results.reduce((sum, r) => sum + (r.offered[pattern] ?? 0), 0)
        for (const r of results) expect(r.unhandled).toEqual([])
        // A sliding window's sub-windows are what Redis holds: `precision` of them make a window.
        const policy = parsePolicies({ limit, window, algorithm }).policies[0]
        const precision = policy?.algorithm === 'sliding-window' ? policy.precision : 1
        const span = window / precision
        let inRedis = 0
        let runStart = Number.POSITIVE_INFINITY
        let runEnd = Number.NEGATIVE_INFINITY
        for (const byStart of counts.values()) {
          for (const [start, count] of byStart) {
            inRedis += count
            runStart = Math.min(runStart, start)
            runEnd = Math.max(runEnd, start + span)
          }
        }
        const worst: Record<Phase, number> = { start: 0, middle: 0, end: 0 }
        for (const byStart of counts.values()) {
          for (const load of windowLoads(byStart, span, precision)) {
            const phase = phaseOf(load, runStart, runEnd, window)
            worst[phase] = Math.max(worst[phase], load.count / limit)
          }
        }
        const percent = (share: number) => `${(share * 100).toFixed(1)} %`
        // The bounds of the keys that fill between syncs hold for syncs on time: the others' unseen
        // traffic is projected over about two intervals (README). On a machine too busy to run the
        // timers on time the horizon is what the run measured, the longest gap between syncs plus
        // an interval, and the bound stretches with it; never below the documented one. The hot
        // key is decided exactly near its limit: its bound does not depend on sync timing.
        const interval = plans[0]?.interval ?? 100
        const maxSyncGap = Math.max(...results.map((r) => r.maxSyncGap))
        const stretch = pattern === 'hot' ? 1 : Math.max(1, (maxSyncGap + interval) / (2 * interval))
        console.log(
          `${processes}×${beside} ${algorithm} ${window}ms ${pattern}: offered ${offered}, admitted ${admitted}, worst window at the start ${percent(worst.start)}, middle ${percent(worst.middle)}, end ${percent(worst.end)} of the limit; longest gap between syncs ${Math.round(maxSyncGap)} ms (bounds × ${stretch.toFixed(2)})`,
        )
        // Nothing admitted is missing, and nothing denied is counted: an exact script run after its
        // deadline counts nothing, and one admitted in time whose reply came after the 250 ms
        // timeout is taken back. A reply later than close() waits for (2.25 s) would stay counted:
        // the 1 % allows for that.
        const excess = inRedis - admitted
        if (excess < 0 || excess > admitted * 0.01) {
          const byField: Record<string, number> = {}
          for (const byStart of totals.values())
            for (const fields of byStart.values())
              for (const [name, value] of Object.entries(fields))
                byField[name.slice(0, 1)] = (byField[name.slice(0, 1)] ?? 0) + value
          console.log(
            'in Redis by field (a, x, r, o):',
            byField,
            'admitted per process:',
            results.map((r) => r.admitted),
          )
          console.log(
            'failed syncs per process:',
            results.map((r) => r.syncErrors),
            'close reports:',
            results.map((r) => r.closed),
          )
        }
        expect(inRedis).toBeGreaterThanOrEqual(admitted)
        expect(inRedis - admitted).toBeLessThanOrEqual(Math.ceil(admitted * 0.01))
        // What the fleet really offered per window, in limits of the loaded keys, over the time it
        // really took (first to last counted (sub-)window): starved load generators stretch a 2.5 s
        // plan over several seconds.
        const offeredLoad =
          (offered * window) / Math.max(duration, runEnd - span - runStart) / (limit * LOADED_KEYS[pattern])
        if (offeredLoad >= MUST_DENY_FROM) expect(admitted).toBeLessThan(offered)
        else console.log(`offered only ${offeredLoad.toFixed(2)}× the limit per window: not enough to require a denial`)
        expect(worst.middle).toBeLessThanOrEqual(1 + OVERSHOOT_BOUND[pattern] * stretch)
        expect(worst.end).toBeLessThanOrEqual(1 + OVERSHOOT_BOUND[pattern] * stretch)
        expect(worst.start).toBeLessThanOrEqual(1 + COLD_START_BOUND[pattern] * stretch)
        // Work-bound: on 2 cores beside other suites a 2.5 s run took over 60 s.
      }, 120_000)
    }
  }
})
