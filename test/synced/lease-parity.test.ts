import { type PolicyInput, type PolicySet, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { differences, runTrace, type StoreFactory } from '../parity/parity.js'
import { TRACE_START, type Trace, type TraceStep } from '../parity/traces.js'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()
const WINDOWS = [10, 100, 1000, 60_000]
/**
 * Limits that divide 1000 and 60 000 ms: a GCRA's unit (window ÷ limit) is then whole
 * milliseconds, before and after a plan change, so its TAT (epoch ms, a double whose last bit is
 * 2⁻¹² ms) is exact. With other limits two orders of the same units can round a TAT that fills
 * the tolerance exactly to either side of it.
 */
const WHOLE_MS_LIMITS = [4, 5, 8, 10, 20, 25, 40, 50]

/** One plan of the named policy 'plan': its limit and burst change, its window and algorithm do not (they are its id). */
const planArbitrary = (
  algorithm: 'token-bucket' | 'gcra',
  window: number,
  wholeMs: boolean,
): fc.Arbitrary<PolicyInput> =>
  fc
    .record({
      limit: wholeMs && algorithm === 'gcra' ? fc.constantFrom(...WHOLE_MS_LIMITS) : fc.integer({ min: 3, max: 60 }),
      burstFactor: fc.double({ min: 0.1, max: 2, noNaN: true }),
    })
    .map(({ limit, burstFactor }) => ({
      name: 'plan',
      algorithm,
      window,
      limit,
      burst: Math.max(1, Math.round(limit * burstFactor)),
    }))

/**
 * Random traces of one named token bucket or GCRA: clock moves, consumes (cost up to `maxCost`),
 * plan changes, and with `extras` peeks and refunds; `still`: the clock never moves, and a GCRA's
 * units are whole milliseconds (see WHOLE_MS_LIMITS).
 */
const bucketTraces = ({ maxCost, extras, still }: { maxCost: number; extras: boolean; still: boolean }) =>
  fc
    .record({
      algorithm: fc.constantFrom('token-bucket' as const, 'gcra' as const),
      window: still ? fc.constantFrom(1000, 60_000) : fc.constantFrom(...WINDOWS),
    })
    .chain(({ algorithm, window }) => {
      const plan = planArbitrary(algorithm, window, still)
      const advance = still
        ? fc.constant(0)
        : fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: window * 2 }))
      const actions: fc.WeightedArbitrary<TraceStep[1]>[] = [
        { weight: 10, arbitrary: fc.integer({ min: 1, max: maxCost }) },
        { weight: 1, arbitrary: plan.map((p) => ({ plan: [p] })) },
      ]
      if (extras) {
        actions.push({ weight: 1, arbitrary: fc.constant('peek' as const) })
        actions.push({ weight: 1, arbitrary: fc.integer({ min: 1, max: maxCost }).map((refund) => ({ refund })) })
      }
      return fc.record({
        name: fc.constant(`random named ${algorithm}`),
        limits: plan.map((p) => [p]),
        steps: fc.array(fc.tuple(advance, fc.oneof(...actions)), { minLength: 1, maxLength: 80 }),
      })
    })

/** Units a lone node holds of a policy at most: the default cap, a tenth of its burst (lease.ts, maxHeld); 1 bounds the rest. */
const maxGrant = (set: PolicySet) => Math.max(1, Math.floor((set.policies[0]?.burst ?? 0) * 0.1))

describe.skipIf(!redis)('SyncedStore on named token bucket and GCRA across plan changes, against RedisStore', () => {
  let client: Redis
  const opened: SyncedStore[] = []
  beforeAll(async () => {
    client = new Redis((redis as RedisServer).url)
    await client.ping()
  })
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()))
    client?.disconnect()
    await redis?.stop()
  })

  it('lease: false decides every step as RedisStore: consumes, peeks, refunds and plan changes, field for field', async () => {
    const prefix = uniquePrefix('lease-parity-off')
    const onRedis: StoreFactory = (now) => new RedisStore({ client, prefix: `${prefix}r:`, now })
    const synced: StoreFactory = (now) => {
      const store = new SyncedStore({ client, prefix: `${prefix}s:`, interval: '1m', now, lease: false })
      opened.push(store)
      const none = () => {
        throw new Error('not in these traces')
      }
      return {
        consume: (key, set, cost) => store.consume(key, set, cost),
        peek: (key, set) => store.peek(key, set),
        refund: (key, set, cost, admittedAt) => store.refund(key, set, cost, admittedAt),
        reset: (key, set) => store.reset(key, set),
        penalize: none,
        block: none,
        now: none,
      }
    }
    let run = 0
    await fc.assert(
      fc.asyncProperty(bucketTraces({ maxCost: 3, extras: true, still: false }), async (trace: Trace) => {
        const key = `off-${run++}`
        const expected = await runTrace(trace, onRedis, key, TRACE_START)
        const actual = await runTrace(trace, synced, key, TRACE_START)
        expect(differences(trace, expected, actual)).toEqual([])
      }),
      { numRuns: 60 },
    )
  })

  /**
   * One trace on a leasing node (a flush after every `flushEvery` steps) and on RedisStore alone,
   * each on its own prefix: which consumes each admitted, and the largest grant of the plans used.
   */
  const leased = async (trace: Trace, flushEvery: number, key: string) => {
    const prefix = uniquePrefix('lease-parity')
    let now = TRACE_START
    const node = new SyncedStore({ client, prefix: `${prefix}s:`, interval: '1m', now: () => now })
    opened.push(node)
    const alone = new RedisStore({ client, prefix: `${prefix}r:`, now: () => now, deniedCache: false })
    let set = parsePolicies(trace.limits)
    const grants = new Set<number>([maxGrant(set)])
    const byNode: boolean[] = []
    const byRedis: boolean[] = []
    for (const [i, [advance, action]] of trace.steps.entries()) {
      now += advance
      if (typeof action === 'object' && 'plan' in action) {
        set = parsePolicies(action.plan)
        grants.add(maxGrant(set))
      } else if (typeof action === 'number') {
        byNode.push((await node.consume(key, set, action)).every((o: Outcome) => o.allowed))
        byRedis.push((await alone.consume(key, set, action)).every((o: Outcome) => o.allowed))
      }
      if (i % flushEvery === flushEvery - 1) await node.flush()
    }
    await node.close()
    return { byNode, byRedis, grant: Math.max(...grants) }
  }

  it('lease: true on a still clock with unit costs: the same requests admitted as RedisStore, plan changes included', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        bucketTraces({ maxCost: 1, extras: false, still: true }),
        fc.integer({ min: 1, max: 10 }),
        async (trace, flushEvery) => {
          const { byNode, byRedis } = await leased(trace, flushEvery, `still-${run++}`)
          expect(byNode).toEqual(byRedis)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('lease: true with the clock moving: never more admitted than RedisStore alone plus one grant', async () => {
    let run = 0
    let fewer = 0
    await fc.assert(
      fc.asyncProperty(
        bucketTraces({ maxCost: 1, extras: false, still: false }),
        fc.integer({ min: 1, max: 10 }),
        async (trace, flushEvery) => {
          const { byNode, byRedis, grant } = await leased(trace, flushEvery, `moving-${run++}`)
          const admitted = (decisions: boolean[]) => decisions.filter(Boolean).length
          // Units held outside the bucket while it refills are room it refilled into: at most what
          // one lease holds, as a plan change gives the old plan's grant back before the new one's.
          expect(admitted(byNode)).toBeLessThanOrEqual(admitted(byRedis) + grant)
          if (admitted(byNode) < admitted(byRedis)) fewer++
        },
      ),
      { numRuns: 150 },
    )
    console.log(`moving clock: the node admitted fewer than RedisStore in ${fewer} of 150 traces`)
  })
})
