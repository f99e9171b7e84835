import { MemoryStore } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import { findRedis, uniquePrefix } from '../support/redis.js'
import { differences, runTrace, type StoreFactory } from './parity.js'
import { traceArbitrary } from './random.js'
import { TRACE_START, traces } from './traces.js'

const redis = await findRedis()

afterAll(async () => {
  await redis?.stop()
})

describe.skipIf(redis === undefined).each(CLIENTS)('parity: MemoryStore and RedisStore on $name', (kind) => {
  let connected: TestClient
  const prefix = uniquePrefix(`parity-${kind.name}`)
  const memory: StoreFactory = (now) => new MemoryStore({ now })
  // The denied cache is a shortcut with its own (documented) answers; parity is about the script.
  const onRedis: StoreFactory = (now) => new RedisStore({ client: connected.client, prefix, now })

  beforeAll(async () => {
    connected = await kind.single(redis?.port ?? 0)
  })
  afterAll(() => connected?.close())

  it.each(traces.map((t) => [t.name, t] as const))('%s', async (_, trace) => {
    const expected = await runTrace(trace, memory, 'user', TRACE_START)
    const actual = await runTrace(trace, onRedis, 'user', TRACE_START)
    expect(differences(trace, expected, actual)).toEqual([])
    expect(actual).toEqual(expected)
  })

  it('random policy sets and traces', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(traceArbitrary, async (trace) => {
        const key = `random-${run++}`
        const expected = await runTrace(trace, memory, key, TRACE_START)
        const actual = await runTrace(trace, onRedis, key, TRACE_START)
        expect(differences(trace, expected, actual)).toEqual([])
      }),
      { numRuns: 150 },
    )
  })

  // Steps of one instant sent together: the store coalesces them into one script call, which
  // must decide them one after the other, as the memory store does in sequence.
  it.each(traces.map((t) => [t.name, t] as const))('%s, same-instant steps sent together', async (_, trace) => {
    const expected = await runTrace(trace, memory, 'together', TRACE_START)
    const actual = await runTrace(trace, onRedis, 'together', TRACE_START, { together: true })
    expect(differences(trace, expected, actual)).toEqual([])
  })

  it('random policy sets and traces, same-instant steps sent together', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(traceArbitrary, async (trace) => {
        const key = `random-together-${run++}`
        const expected = await runTrace(trace, memory, key, TRACE_START)
        const actual = await runTrace(trace, onRedis, key, TRACE_START, { together: true })
        expect(differences(trace, expected, actual)).toEqual([])
      }),
      { numRuns: 150 },
    )
  })
})
