import { parsePolicies } from '@sluice/core'
import { type RedisClient, RedisStore } from '@sluice/redis'
import type { Cluster, Redis } from 'ioredis'
import { expect, it } from 'vitest'
import { differences, runTrace } from '../parity/parity.js'
import { TRACE_START, traces } from '../parity/traces.js'
import { uniquePrefix } from '../support/redis.js'

/** Client keys that would break a naive key scheme: tags, protocol bytes, size, odd unicode. */
export const HOSTILE_KEYS: readonly string[] = [
  '',
  '{',
  '}{',
  'a{b}c',
  'a%7Bb%7Dc',
  '{user}:1',
  'line\nbreak\r\n*3\r\n$3\r\nDEL',
  'x'.repeat(10 * 1024),
  `${'x'.repeat(10 * 1024 - 1)}y`,
  '\u0000\u0001\u00ff\ufffd',
  '\ud800',
  '\udc00',
  '\ud83d\ude00 emoji and 漢字',
  '%H',
  ' ',
]

/**
 * The store's behaviour on any deployment and client library; `client` (the store's) and `admin`
 * (an ioredis client of the same deployment, to inspect keys) are read when the tests run.
 */
export function storeBehaviour(client: () => RedisClient, admin: () => Redis | Cluster): void {
  const store = (options: { now?: () => number } = {}) =>
    new RedisStore({ client: client(), prefix: uniquePrefix('suite'), deniedCache: false, ...options })

  it('keeps every hostile key apart and intact', async () => {
    // A fixed clock: on the real one a minute could turn between a key's two consumes.
    const s = store({ now: () => 1_700_000_000_000 })
    const set = parsePolicies([{ limit: 1, window: 60_000, algorithm: 'fixed-window' }])
    for (const key of HOSTILE_KEYS) {
      const keys = s.keysOf(key, set)
      expect(keys[0]?.match(/[{}]/g)).toEqual(['{', '}'])
      expect(keys[0]?.length).toBeLessThan(s.prefix.length + 300)
      const [first] = await s.consume(key, set, 1)
      expect(first?.allowed, JSON.stringify(key.slice(0, 20))).toBe(true)
    }
    for (const key of HOSTILE_KEYS) {
      const [second] = await s.consume(key, set, 1)
      expect(second?.allowed).toBe(false)
      await s.reset(key, set)
      const [afterReset] = await s.consume(key, set, 1)
      expect(afterReset?.allowed).toBe(true)
      await s.reset(key, set)
    }
  })

  it('puts every policy of a key in one slot and gives every written key an expiry', async () => {
    const s = store()
    const set = parsePolicies([
      { limit: 3, window: 50, algorithm: 'fixed-window' },
      { limit: 10, window: 60_000 },
      { limit: 5, window: 2000, algorithm: 'sliding-log' },
      { limit: 5, window: 1000, algorithm: 'token-bucket' },
      { limit: 4, window: 1000, algorithm: 'gcra' },
    ])
    for (const key of ['{a}b', 'x'.repeat(10_000)]) {
      const outcomes = await s.consume(key, set, 1)
      const keys = s.keysOf(key, set)
      const tags = new Set(keys.map((k) => k.slice(k.indexOf('{'), k.indexOf('}') + 1)))
      expect(tags.size).toBe(1)
      for (const [i, k] of keys.entries()) {
        const ttl = await admin().pttl(k)
        expect(ttl, k).toBeGreaterThan(0)
        expect(ttl).toBeLessThanOrEqual((outcomes[i]?.resetAfter ?? 0) + 1000)
      }
      await s.reset(key, set)
      for (const k of keys) expect(await admin().exists(k)).toBe(0)
    }
  })

  it('writes nothing when any policy denies, and peek consumes nothing', async () => {
    let now = TRACE_START
    const s = store({ now: () => now })
    const set = parsePolicies([
      { limit: 10, window: 1000, algorithm: 'fixed-window' },
      { limit: 2, window: 1000, algorithm: 'gcra' },
    ])
    const keys = s.keysOf('k', set)
    await s.consume('k', set, 2)
    const before = await Promise.all(keys.map((k) => admin().get(k)))
    const denied = await s.consume('k', set, 1)
    expect(denied.map((o) => o.allowed)).toEqual([true, false])
    for (let i = 0; i < 5; i++) await s.peek('k', set)
    expect(await Promise.all(keys.map((k) => admin().get(k)))).toEqual(before)
    now += 500
    expect((await s.peek('k', set)).map((o) => o.remaining)).toEqual([8, 1])
    await s.reset('k', set)
  })

  it("refunds every policy in one call, keeps each key's expiry, and never creates a key", async () => {
    let now = TRACE_START
    const s = store({ now: () => now })
    const set = parsePolicies([
      { limit: 5, window: 60_000, algorithm: 'fixed-window', name: 'fixed' },
      { limit: 10, window: 60_000, precision: 4, name: 'sliding' },
      { limit: 5, window: 60_000, algorithm: 'sliding-log', name: 'log' },
      { limit: 5, window: 60_000, algorithm: 'token-bucket', name: 'bucket' },
      { limit: 5, window: 60_000, algorithm: 'gcra', name: 'gcra' },
    ])
    const keys = s.keysOf('refunded', set)
    await s.refund('refunded', set, 2)
    for (const k of keys) expect(await admin().exists(k)).toBe(0)

    await s.consume('refunded', set, 3)
    const ttls = await Promise.all(keys.map((k) => admin().pttl(k)))
    now += 10
    await s.refund('refunded', set, 2)
    for (const [i, k] of keys.entries()) {
      const ttl = await admin().pttl(k)
      expect(ttl, k).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(ttls[i] as number)
    }
    // gcra and token-bucket have dripped back 10 ms of their 12 s interval: nothing whole.
    expect((await s.peek('refunded', set)).map((o) => o.remaining)).toEqual([4, 9, 4, 4, 4])
    await s.refund('refunded', set, 5)
    expect((await s.peek('refunded', set)).map((o) => o.remaining)).toEqual([5, 10, 5, 5, 5])
    await s.reset('refunded', set)
  })

  it("a sliding-window refund after its sub-window moved on does not shorten the next write's expiry", async () => {
    const aligned = TRACE_START - (TRACE_START % 60_000)
    let now = aligned
    const s = store({ now: () => now })
    const set = parsePolicies([{ limit: 10, window: 60_000, name: 'sliding' }])
    const [key] = s.keysOf('moved', set)
    await s.consume('moved', set, 1)
    now = aligned + 100_000
    await s.refund('moved', set, 1)
    now = aligned + 110_000
    await s.consume('moved', set, 1)
    // This count lives 10 s in its sub-window plus one window: a fresh 71 s expiry (resetAfter +
    // 1 s slack), not the first write's 121 s kept by an in-place write.
    const ttl = await admin().pttl(key as string)
    expect(ttl).toBeGreaterThan(60_000)
    expect(ttl).toBeLessThanOrEqual(71_000)
    await s.reset('moved', set)
  })

  it('matches the memory store on the parity traces under a hostile key', async () => {
    const { MemoryStore } = await import('@sluice/core')
    const key = `{hostile}\n${'k'.repeat(300)}`
    for (const trace of traces) {
      const expected = await runTrace(trace, (now) => new MemoryStore({ now }), key, TRACE_START)
      const actual = await runTrace(trace, (now) => store({ now }), key, TRACE_START)
      expect(differences(trace, expected, actual), trace.name).toEqual([])
    }
  })
}
