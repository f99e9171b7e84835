import { createLimiter, MemoryStore, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { SyncedStore } from '@sluice/redis'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { differences, runTrace, type StoreFactory, type TraceOptions, traceSet } from '../parity/parity.js'
import { countedTraceArbitrary } from '../parity/random.js'
import { TRACE_START, type Trace, traces } from '../parity/traces.js'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis, uniquePrefix } from '../support/redis.js'
import { allowed } from '../support/synced.js'

const redis = await findRedis()

afterAll(async () => {
  await redis?.stop()
})

const COUNTED = ['fixed-window', 'sliding-window'] as const

/** The shared traces a SyncedStore serves: counted windows only, no blockFor, no penalty or block. */
function counted(trace: Trace): boolean {
  const sets = [trace.limits, ...trace.steps.flatMap(([, a]) => (typeof a === 'object' && 'plan' in a ? [a.plan] : []))]
  const policies = sets.flatMap((limits) => traceSet(limits).policies)
  const steps = trace.steps.every(([, a]) => typeof a !== 'object' || !('penalty' in a || 'block' in a))
  return steps && policies.every((p) => (COUNTED as readonly string[]).includes(p.algorithm) && p.blockFor === 0)
}

describe.skipIf(redis === undefined).each(CLIENTS)(
  'SyncedStore: plan changes and calendar periods on $name',
  (kind) => {
    let connected: TestClient
    /** ioredis, to inspect keys; the stores use the library under test. */
    let inspect: Redis
    beforeAll(async () => {
      connected = await kind.single(redis?.port ?? 0)
      inspect = new Redis(redis?.port ?? 0, '127.0.0.1')
    })
    afterAll(() => {
      connected?.close()
      inspect?.disconnect()
    })

    const memory: StoreFactory = (now) => new MemoryStore({ now })
    /**
     * One node alone in its fleet (a prefix of its own); the trace's clock is its clock. Its timer
     * never fires during a trace (an hour): a sync still in flight while the trace's clock jumps
     * seconds ahead would read as a stalled Redis, and the node would decide alone on its share.
     */
    const oneNode: StoreFactory = (now) =>
      new SyncedStore({
        client: connected.client,
        prefix: uniquePrefix('synced-parity'),
        nodeId: 'n0',
        interval: '1h',
        now,
      })
    /** Redis is part of every decision: its counts come back before the next step (and near the limit, decisions go exact). */
    const flushed: TraceOptions = { afterStep: (store) => (store as SyncedStore).flush() }
    /** Only the first step's sync (the one the first decision starts) is waited for: then every decision is local. */
    const local = (): TraceOptions => {
      let first = true
      return {
        afterStep: async (store) => {
          if (first) await (store as SyncedStore).flush()
          first = false
        },
      }
    }

    describe('parity with MemoryStore on one node', () => {
      it.each(traces.filter(counted).map((t) => [t.name, t] as const))('%s', async (_, trace) => {
        const expected = await runTrace(trace, memory, 'user', TRACE_START)
        const actual = await runTrace(trace, oneNode, 'user', TRACE_START, flushed)
        expect(differences(trace, expected, actual)).toEqual([])
      })

      it('random named windows and calendar periods with plan changes, refunds and admittedAt, flushed after every step', async () => {
        let run = 0
        await fc.assert(
          fc.asyncProperty(countedTraceArbitrary, async (trace) => {
            const key = `random-${run++}`
            const expected = await runTrace(trace, memory, key, TRACE_START)
            const actual = await runTrace(trace, oneNode, key, TRACE_START, flushed)
            expect(differences(trace, expected, actual)).toEqual([])
          }),
          { numRuns: 200 },
        )
        // 200 traces, a Redis round trip after every step: about 8 s alone, several times that on
        // a machine busy with other work. The bound is on the work, not its speed.
      }, 120_000)

      it('the same, decided from local counts alone (no sync after the first step)', async () => {
        let run = 0
        await fc.assert(
          fc.asyncProperty(countedTraceArbitrary, async (trace) => {
            const key = `local-${run++}`
            const expected = await runTrace(trace, memory, key, TRACE_START)
            const actual = await runTrace(trace, oneNode, key, TRACE_START, local())
            expect(differences(trace, expected, actual)).toEqual([])
          }),
          { numRuns: 200 },
        )
      })
    })

    describe('two nodes counting one named key', () => {
      const T = 1_700_000_000_000
      const DAY = 86_400_000
      const pair = (now: () => number) => {
        const prefix = uniquePrefix('synced-plans')
        const client = connected.client
        return [0, 1].map((i) => new SyncedStore({ client, prefix, nodeId: `n${i}`, interval: 1000, now })) as [
          SyncedStore,
          SyncedStore,
        ]
      }

      for (const algorithm of COUNTED) {
        it(`${algorithm}: an upgrade on one node reads what both counted; a downgrade below it denies until the window turns`, async () => {
          let now = T + 1000
          const [a, b] = pair(() => now)
          const plan = (limit: number, store: SyncedStore) =>
            createLimiter({ limits: { name: 'plan', limit, window: '1d', algorithm }, store })
          const freeOnA = plan(100, a)
          const freeOnB = plan(100, b)
          // Pro adds a per-minute limit: another set, holding the same named daily policy.
          const proOnB = createLimiter({
            limits: [
              { name: 'plan', limit: 1000, window: '1d', algorithm },
              { name: 'minute', limit: 500, window: '1m', algorithm },
            ],
            store: b,
          })
          try {
            expect(await freeOnA.consume('acme', { cost: 60 })).toMatchObject({ allowed: true, remaining: 40 })
            expect(await freeOnB.consume('acme', { cost: 30 })).toMatchObject({ allowed: true, remaining: 70 })
            await a.flush()
            await b.flush()
            await a.flush()
            // b upgrades: the 90 both nodes counted stand against the new limit, decided from b's local counts.
            expect((await proOnB.peek('acme')).policies[0]).toMatchObject({ remaining: 910 })
            expect((await proOnB.consume('acme', { cost: 5 })).policies[0]).toMatchObject({
              allowed: true,
              remaining: 905,
            })
            expect((await proOnB.consume('acme', { cost: 195 })).policies[0]).toMatchObject({
              allowed: true,
              remaining: 710,
            })
            await b.flush()
            await a.flush()
            // a still decides on the free plan: 290 used of 100, nothing left, not even after a sync.
            const denied = await freeOnA.consume('acme')
            expect(denied).toMatchObject({ allowed: false, remaining: 0 })
            expect(await freeOnB.consume('acme')).toMatchObject({ allowed: false, remaining: 0 })
            // One hash per (sub-)window and node field: the plans wrote the same fields, 60 + 30 + 200 in all.
            await a.flush()
            await b.flush()
            const keys = await inspect.keys(`${a.prefix}*:s:@plan:*`)
            let total = 0
            for (const key of keys) {
              const fields = await inspect.hgetall(key)
              for (const [name, value] of Object.entries(fields)) if (/^[ax]:/.test(name)) total += Number(value)
            }
            expect(total).toBe(290)

            now += algorithm === 'fixed-window' ? DAY : 2 * DAY // the window has turned
            expect(await freeOnA.consume('acme')).toMatchObject({ allowed: true, remaining: 99 })
          } finally {
            await Promise.all([a.close(), b.close()])
          }
        })
      }

      it('one unnamed policy in two limiters’ sets on one node: one count, as in memory, and Redis holds all of it', async () => {
        const [a, b] = pair(() => T)
        const alone = createLimiter({ limits: { limit: 5, window: '1m', algorithm: 'fixed-window' }, store: a })
        const paired = createLimiter({
          limits: [
            { limit: 5, window: '1m', algorithm: 'fixed-window' },
            { limit: 100, window: '1h', algorithm: 'fixed-window' },
          ],
          store: a,
        })
        try {
          for (let i = 0; i < 3; i++) expect((await alone.consume('k')).allowed).toBe(true)
          expect(await paired.consume('k', { cost: 2 })).toMatchObject({ allowed: true, remaining: 0 })
          expect((await alone.consume('k')).allowed).toBe(false)
          await a.flush()
          const set = parsePolicies({ limit: 5, window: '1m', algorithm: 'fixed-window' })
          await b.consume('k', set, 0)
          await b.flush()
          expect((b.peek('k', set) as readonly Outcome[])[0]?.remaining).toBe(0)
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      })

      it('a per-request plan read from a database: every limiter of one name on one node shares one count', async () => {
        const now = T
        const [a, b] = pair(() => now)
        const limiters = [5, 10, 20].map((limit) =>
          createLimiter({ limits: { name: 'api', limit, window: '1m', algorithm: 'fixed-window' }, store: a }),
        )
        try {
          for (const [i, limiter] of [0, 1, 2, 0, 1, 2, 0].entries()) {
            expect((await (limiters[limiter] as (typeof limiters)[number]).consume('k')).allowed).toBe(
              i < 5 || limiter > 0,
            )
          }
          await a.flush()
          // 6 admitted (the 5-plan denied the 7th): the other node sees one count of 6 and its own 1, not three counts of a few each.
          const set = parsePolicies({ name: 'api', limit: 20, window: '1m', algorithm: 'fixed-window' })
          await b.consume('k', set, 1)
          await b.flush()
          expect((b.peek('k', set) as readonly Outcome[])[0]?.remaining).toBe(13)
          expect(allowed(await b.consume('k', set, 1))).toBe(true)
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      })
    })
  },
)
