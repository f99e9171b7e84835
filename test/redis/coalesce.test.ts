import { ConfigError, createLimiter, MemoryStore, type PolicySet, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { type RedisClient, RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENTS, type TestClient } from '../support/clients.js'
import {
  commandsBetween,
  parseCommandStats,
  privateRedisAvailable,
  type RedisServer,
  startRedisServer,
} from '../support/redis.js'
import { unhandledRejections } from '../support/unhandled.js'

const NOW = 1_700_000_000_123

/** One request of a batch: a consume of `cost`, or a peek. */
type Ask = readonly [key: string, set: PolicySet, cost: number | 'peek']

const ask = (store: MemoryStore | RedisStore, [key, set, cost]: Ask) =>
  cost === 'peek' ? store.peek(key, set) : store.consume(key, set, cost)

/** The reference: the memory store deciding the same requests one after the other. */
async function inSequence(asks: readonly Ask[]): Promise<(readonly Outcome[])[]> {
  const memory = new MemoryStore({ now: () => NOW })
  const outcomes = []
  for (const a of asks) outcomes.push(await ask(memory, a))
  return outcomes
}

const available = await privateRedisAvailable()

describe.skipIf(!available).each(CLIENTS)('RedisStore coalescing (private server): $name', (kind) => {
  let server: RedisServer
  let connected: TestClient
  /** The store's client, of the library under test; `admin` (ioredis) inspects and breaks things. */
  let client: RedisClient
  let admin: Redis
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  beforeAll(async () => {
    watch()
    server = await startRedisServer()
    connected = await kind.single(server.port)
    client = connected.client
    admin = new Redis(server.port)
  })
  afterAll(async () => {
    connected?.close()
    admin.disconnect()
    await server.stop()
    unwatch()
    expect(unhandled).toEqual([])
  })

  const stats = async () => parseCommandStats(await admin.info('commandstats'))

  it('sends the decisions that arrive while one is in flight as one EVALSHA, reading TIME once', async () => {
    // Redis's clock, not an injected one: the script reads TIME.
    const store = new RedisStore({ client, prefix: 'one-call:', deniedCache: false })
    const set = parsePolicies(['100/min', { limit: 100, window: 1000, algorithm: 'gcra' }])
    await store.peek('warm', set) // the client's first call of the script is EVAL, which loads it
    const before = await stats()
    // The first goes at once, on its own; the other 15 join one batch (the default holds 16).
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => store.consume(`user-${i % 4}`, set, 1)))
    const { evalsha, time, mget } = commandsBetween(before, await stats())
    expect({ evalsha, time, mget }).toEqual({ evalsha: 2, time: 2, mget: 16 })
    expect(outcomes.every((o) => o.every((p) => p.allowed))).toBe(true)
  })

  it('sends a full batch at once: 1 + 40 decisions are 4 calls with maxBatch 16, 41 without coalescing', async () => {
    const set = parsePolicies(['1000/min'])
    for (const [coalesce, calls] of [
      [true, 4],
      [{ maxBatch: 40 }, 2],
      [false, 41],
    ] as const) {
      const prefix = `full-${calls}:`
      const store = new RedisStore({ client, prefix, coalesce, now: () => NOW })
      const before = await stats()
      const outcomes = await Promise.all(Array.from({ length: 41 }, () => store.consume('k', set, 1)))
      expect(commandsBetween(before, await stats()).evalsha, prefix).toBe(calls)
      // In arrival order, each seeing every earlier write.
      expect(outcomes.map((o) => o[0]?.remaining)).toEqual(Array.from({ length: 41 }, (_, i) => 999 - i))
    }
  })

  it.each([
    ['fixed-window', { limit: 5, window: 60_000, algorithm: 'fixed-window' }],
    ['sliding-window', { limit: 5, window: 60_000, precision: 3 }],
    ['sliding-log', { limit: 5, window: 60_000, algorithm: 'sliding-log' }],
    ['token-bucket', { limit: 5, window: 60_000, algorithm: 'token-bucket', burst: 4, maxDelay: 30_000 }],
    ['gcra', { limit: 5, window: 60_000, algorithm: 'gcra', burst: 3, maxDelay: 20_000 }],
  ] as const)('decides repeats of one key in a batch one after the other, exactly: %s', async (name, policy) => {
    const store = new RedisStore({ client, prefix: 'repeats:', deniedCache: false, now: () => NOW })
    const set = parsePolicies([policy])
    const costs = [1, 2, 'peek', 1, 3, 1, 'peek', 1, 1, 2, 1] as const
    const asks: Ask[] = costs.map((cost) => [name, set, cost])
    const before = await stats()
    const actual = await Promise.all(asks.map((a) => ask(store, a)))
    expect(commandsBetween(before, await stats()).evalsha).toBe(2)
    expect(actual).toEqual(await inSequence(asks))
    expect(actual.filter((o, i) => costs[i] !== 'peek' && o[0]?.allowed).length).toBeGreaterThan(1)
    expect(actual.some((o) => !o[0]?.allowed)).toBe(true)
  })

  it('mixes policy sets and keys in one batch; a denied decision writes nothing for the next', async () => {
    const store = new RedisStore({ client, prefix: 'mixed:', deniedCache: false, now: () => NOW })
    // Both sets hold a fixed window of 3 (shared counts, as on any store); the second adds a
    // GCRA of one per second and a sliding window.
    const one = parsePolicies([{ limit: 3, window: 60_000, algorithm: 'fixed-window' }])
    const three = parsePolicies([
      { limit: 3, window: 60_000, algorithm: 'fixed-window' },
      { limit: 1, window: 1000, algorithm: 'gcra' },
      '10/s',
    ])
    const asks: Ask[] = [
      ['a', one, 1],
      ['a', three, 1],
      ['a', three, 1], // denied by the GCRA: takes nothing from the fixed window...
      ['a', one, 1], // ...so this one still fits
      ['a', one, 'peek'],
      ['b', three, 1],
      ['b', one, 2],
      ['b', three, 'peek'],
      ['a', one, 1], // denied: the fixed window is full
      ['c', one, 1],
    ]
    const before = await stats()
    const actual = await Promise.all(asks.map((a) => ask(store, a)))
    expect(commandsBetween(before, await stats()).evalsha).toBe(2)
    expect(actual).toEqual(await inSequence(asks))
    expect(actual.map((o) => o.every((p) => p.allowed))).toEqual([
      true,
      true,
      false,
      true,
      false,
      true,
      true,
      false,
      false,
      true,
    ])
  })

  it('heals NOSCRIPT for a whole batch without counting any decision twice', async () => {
    const store = new RedisStore({ client, prefix: 'noscript:', deniedCache: false })
    const set = parsePolicies([{ limit: 5, window: 60_000, algorithm: 'fixed-window' }])
    await admin.script('FLUSH')
    const before = await stats()
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => store.consume('k', set, 1)))
    expect(outcomes.map((o) => o[0]?.allowed)).toEqual([...Array(5).fill(true), ...Array(5).fill(false)])
    // The lone first call answered NOSCRIPT and ran once with EVAL; the batch too if it was sent
    // before that answer, else it waited for the retry and found the script.
    const { eval: evals = 0, evalsha = 0 } = commandsBetween(before, await stats())
    expect(evalsha).toBe(2)
    expect([1, 2]).toContain(evals)
    const state = await admin.getBuffer(store.keysOf('k', set)[0] as string)
    expect(state?.readDoubleLE(8)).toBe(5)
  })

  it('fails every caller of a failed batch, and only them', async () => {
    const store = new RedisStore({ client, prefix: 'failed:', deniedCache: false })
    const set = parsePolicies(['10/min'])
    // A key of the wrong type makes the script's GET fail, and with it the whole call.
    await admin.lpush(store.keysOf('broken', set)[0] as string, 'x')
    const first = store.consume('fine', set, 1)
    const batch = ['fine', 'broken', 'other', 'fine'].map((key) => store.consume(key, set, 1))
    expect((await first)[0]?.remaining).toBe(9)
    const settled = await Promise.allSettled(batch)
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected'])
    for (const s of settled) expect(String((s as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/)
    // A script's writes before an error stay (Redis has no rollback): the batch's first 'fine'
    // was counted although its caller got the error. Nothing after the failing one was.
    expect((await store.consume('fine', set, 1))[0]?.remaining).toBe(7)
    expect((await store.consume('other', set, 1))[0]?.remaining).toBe(9)

    // Through a limiter, each caller gets its own onStoreError decision.
    const limiter = createLimiter({ limits: ['10/min'], store, onStoreError: 'deny' })
    const decisions = await Promise.all(['fine', 'broken', 'fine'].map((key) => limiter.consume(key)))
    expect(decisions.map((d) => [d.source, d.allowed])).toEqual([
      ['store', true],
      ['error', false],
      ['error', false],
    ])
    await admin.del(store.keysOf('broken', set)[0] as string)
  })

  it('keeps the denied-key cache: a denial decided in a batch is then answered locally', async () => {
    const store = new RedisStore({ client, prefix: 'cached:', now: () => NOW })
    const set = parsePolicies([{ limit: 3, window: 60_000, algorithm: 'fixed-window' }])
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => store.consume('k', set, 1)))
    expect(outcomes.map((o) => o[0]?.allowed)).toEqual([true, true, true, false, false])
    const before = await stats()
    const cached = store.consume('k', set, 1)
    expect(cached).not.toBeInstanceOf(Promise)
    expect(commandsBetween(before, await stats())).toEqual({})
  })

  it.each([
    ['coalesce', 'yes'],
    ['coalesce', null],
    ['coalesce.maxBatch', 0],
    ['coalesce.maxBatch', 1.5],
    ['coalesce.maxBatch', 1001],
    ['coalesce.maxBatch', '16'],
  ])('rejects %s = %j with a ConfigError naming it', (field, value) => {
    const coalesce = field === 'coalesce' ? value : { maxBatch: value }
    const make = () => new RedisStore({ client, coalesce: coalesce as never })
    expect(make).toThrow(ConfigError)
    expect(make).toThrow(new RegExp(`^${field.replace('.', '\\.')} `))
  })
})
