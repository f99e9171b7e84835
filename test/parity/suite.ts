import type { AlgorithmName } from '@sluice/core'
import { MemoryStore } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis, privateRedisAvailable, uniquePrefix } from '../support/redis.js'
import { canShiftClocks, startFrozenRedis } from '../support/shifted-clock.js'
import { differences, runTrace, type StoreFactory, traceSet } from './parity.js'
import { TRACE_START, type Trace, traces } from './traces.js'

/** The algorithms a trace's sets use, its plan changes' included. */
export function algorithmsOf(trace: Trace): Set<AlgorithmName> {
  const sets = [trace.limits, ...trace.steps.flatMap(([, a]) => (typeof a === 'object' && 'plan' in a ? [a.plan] : []))]
  return new Set(sets.flatMap((limits) => traceSet(limits).policies.map((p) => p.algorithm)))
}

/** The shared traces of `algorithm` alone (undefined: those of two algorithms or more). */
export function tracesOf(algorithm: AlgorithmName | undefined): Trace[] {
  return traces.filter((trace) => {
    const used = algorithmsOf(trace)
    return algorithm === undefined ? used.size > 1 : used.size === 1 && used.has(algorithm)
  })
}

/**
 * A Redis whose clock stands still, where one can be made: a trace's decisions run on the trace's
 * clock (the store's `now`), but Redis expires a state on its own, resetAfter + 1 s of real time
 * after it was written; a step that came more than that later (a loaded machine stalls a test) found
 * its state gone while the trace's clock said it was live. With the server's clock stopped nothing
 * expires, and a state older than its resetAfter by the trace's clock must decide as none, as the
 * scripts promise. Elsewhere the shared server, where a stall of over a second could still fail a trace.
 */
async function redisOnTraceClock(): Promise<{ port: number; stop(): Promise<void> } | undefined> {
  if (!((await privateRedisAvailable()) && (await canShiftClocks()))) return findRedis()
  const redis = await startFrozenRedis()
  return { port: redis.server.port, stop: () => redis.stop() }
}

/**
 * MemoryStore (the reference) and RedisStore (the scripts) on the same traces, on every client:
 * identical outcomes, field for field, at every step, with steps sent one by one and with the
 * steps of one instant sent together (the store coalesces them into one script call, which must
 * decide them one after the other, as the memory store does in sequence).
 */
export async function parityOf(
  title: string,
  named: readonly Trace[],
  random: fc.Arbitrary<Trace>,
  numRuns: number,
): Promise<void> {
  const redis = await redisOnTraceClock()
  afterAll(async () => {
    await redis?.stop()
  })

  describe.skipIf(redis === undefined).each(CLIENTS)(
    `parity of ${title}: MemoryStore and RedisStore on $name`,
    (kind) => {
      let connected: TestClient
      const prefix = uniquePrefix(`parity-${kind.name}`)
      const memory: StoreFactory = (now) => new MemoryStore({ now })
      // The denied cache is a shortcut with its own (documented) answers; parity is about the script.
      const onRedis: StoreFactory = (now) => new RedisStore({ client: connected.client, prefix, now })

      beforeAll(async () => {
        connected = await kind.single(redis?.port ?? 0)
      })
      afterAll(() => connected?.close())

      for (const together of [false, true]) {
        const how = together ? ', same-instant steps sent together' : ''
        const key = together ? 'together' : 'user'
        it.skipIf(named.length === 0).each(named.map((t) => [t.name, t] as const))(`%s${how}`, async (_, trace) => {
          const expected = await runTrace(trace, memory, key, TRACE_START)
          const actual = await runTrace(trace, onRedis, key, TRACE_START, { together })
          expect(differences(trace, expected, actual)).toEqual([])
          if (!together) expect(actual).toEqual(expected)
        })

        it(`random traces${how}`, async () => {
          let run = 0
          await fc.assert(
            fc.asyncProperty(random, async (trace) => {
              const runKey = `random-${key}-${run++}`
              const expected = await runTrace(trace, memory, runKey, TRACE_START)
              const actual = await runTrace(trace, onRedis, runKey, TRACE_START, { together })
              expect(differences(trace, expected, actual)).toEqual([])
            }),
            { numRuns },
          )
          // Work-bound: 150 traces took 2-8 s at load 16, over 20 s at load 25.
        }, 120_000)
      }
    },
  )
}
