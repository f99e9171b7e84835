// DurableObjectStore in Node, on a namespace of RateLimiterObjects over in-memory storage: the
// routing, the clock it sends and what it does with an error. The workerd tests run it for real.
import { ALGORITHMS, ConfigError, createLimiter, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { DurableObjectStore } from './durable-object-store.js'
import { FakeStorage } from './fake-storage.test-util.js'
import { RateLimiterObject } from './object.js'

/** A namespace whose objects are RateLimiterObjects in this process, one per name. */
function namespace() {
  const objects = new Map<string, RateLimiterObject>()
  const bodies: unknown[] = []
  /** What `get` was given besides the id, per call. */
  const getOptions: unknown[] = []
  return {
    objects,
    bodies,
    getOptions,
    idFromName: (name: string) => name,
    get: (id: unknown, ...options: unknown[]) => {
      getOptions.push(...options)
      return stubOf(objects, bodies, id)
    },
  }
}

function stubOf(objects: Map<string, RateLimiterObject>, bodies: unknown[], id: unknown) {
  return {
    fetch: async (url: string, init?: RequestInit) => {
      bodies.push(JSON.parse(String(init?.body)))
      const name = id as string
      if (!objects.has(name)) objects.set(name, new RateLimiterObject({ storage: new FakeStorage() }))
      return (objects.get(name) as RateLimiterObject).fetch(new Request(url, init))
    },
  }
}

const set = parsePolicies(['3/min'])

describe('DurableObjectStore', () => {
  it('sends each key to its own object, or to shard-N, and the shards share nothing', async () => {
    const perKey = namespace()
    const store = new DurableObjectStore({ namespace: perKey })
    await store.consume('a', set, 1)
    await store.consume('b', set, 1)
    expect([...perKey.objects.keys()]).toEqual(['a', 'b'])

    const sharded = namespace()
    const onShards = new DurableObjectStore({ namespace: sharded, shards: 4 })
    for (let i = 0; i < 40; i++) await onShards.consume(`user:${i}`, set, 1)
    expect([...sharded.objects.keys()].sort()).toEqual(['shard-0', 'shard-1', 'shard-2', 'shard-3'])
    // Each key still has its own counts inside its shard.
    expect((await onShards.peek('user:7', set))[0]?.remaining).toBe(2)
  })

  it('sends its clock only when it was given one, in whole milliseconds', async () => {
    const ns = namespace()
    await new DurableObjectStore({ namespace: ns }).peek('k', set)
    await new DurableObjectStore({ namespace: ns, now: () => 1_000.7 }).peek('k', set)
    expect(ns.bodies.map((body) => (body as { now?: number }).now)).toEqual([undefined, 1000])
  })

  it('gives namespace.get the location hint, when there is one', async () => {
    const plain = namespace()
    await new DurableObjectStore({ namespace: plain }).consume('k', set, 1)
    expect(plain.getOptions).toEqual([])
    const hinted = namespace()
    const store = new DurableObjectStore({ namespace: hinted, locationHint: 'weur', shards: 2 })
    await store.consume('k', set, 1)
    await store.peek('other', set)
    expect(hinted.getOptions).toEqual([{ locationHint: 'weur' }, { locationHint: 'weur' }])
  })

  it('refuses a location hint Cloudflare does not have, naming it and the ones it has', () => {
    const create = () => new DurableObjectStore({ namespace: namespace(), locationHint: 'europe' as never })
    expect(create).toThrow(ConfigError)
    expect(create).toThrow(
      /^locationHint must be one of .*: wnam, enam, sam, weur, eeur, apac, oc, afr, me, got .europe./,
    )
  })

  it('rejects with what the object answered when it refuses a call', async () => {
    const refusing = {
      idFromName: (name: string) => name,
      get: () => ({ fetch: async () => new Response('op must be one of …', { status: 400 }) }),
    }
    await expect(new DurableObjectStore({ namespace: refusing }).consume('k', set, 1)).rejects.toThrow(
      'RateLimiterObject answered 400: op must be one of …',
    )
  })
})

describe.each(ALGORITHMS)(
  'DurableObjectStore, %s: a named policy keeps its usage across a plan change',
  (algorithm) => {
    it('an upgrade after 100 of 100 used leaves 900, through the object and its storage', async () => {
      const store = new DurableObjectStore({ namespace: namespace(), now: () => 20_000 * 86_400_000 + 1000 })
      const free = createLimiter({ limits: { name: 'plan', limit: 100, window: '1d', algorithm }, store })
      const pro = createLimiter({ limits: { name: 'plan', limit: 1000, window: '1d', algorithm }, store })
      expect((await free.consume('user', { cost: 100 })).allowed).toBe(true)
      expect((await pro.peek('user')).remaining).toBe(900)
      expect((await pro.consume('user', { cost: 900 })).allowed).toBe(true)
      expect(await free.consume('user')).toMatchObject({ allowed: false, remaining: 0 })
    })
  },
)

describe('DurableObjectStore: calendar periods', () => {
  const DAY = 86_400_000

  it('serves a monthly quota through the object, fresh at 00:00 UTC on the 1st', async () => {
    let now = Date.UTC(2026, 0, 31, 23, 59, 59, 999)
    const store = new DurableObjectStore({ namespace: namespace(), now: () => now })
    const monthly = createLimiter({ limits: { limit: 3, period: 'month' }, store })
    expect((await monthly.consume('user', { cost: 3 })).remaining).toBe(0)
    expect(await monthly.consume('user')).toMatchObject({ allowed: false, retryAfter: 1, resetAfter: 1 })
    now += 1
    // February: 28 days to its end.
    expect(await monthly.consume('user')).toMatchObject({ allowed: true, remaining: 2, resetAfter: 28 * DAY })
  })

  it('sends a billing-day period as its fixed window, without the anchor function JSON cannot carry', async () => {
    const ns = namespace()
    let now = Date.UTC(2026, 1, 27, 23, 59, 59, 999)
    const store = new DurableObjectStore({ namespace: ns, now: () => now })
    const billingDay = new Map([['customer', '2026-01-31']])
    const limits = { limit: 3, period: 'month', anchor: (key: string) => billingDay.get(key) ?? '2026-01-01' } as const
    const monthly = createLimiter({ limits, store })
    expect((await monthly.consume('customer', { cost: 3 })).allowed).toBe(true)
    expect(await monthly.consume('customer')).toMatchObject({ allowed: false, resetAfter: 1 })
    // February lacks the 31st: its period starts on the 28th and runs to 31 March.
    now += 1
    const start = Date.UTC(2026, 1, 28)
    expect(await monthly.consume('customer')).toMatchObject({ allowed: true, remaining: 2, resetAfter: 31 * DAY })
    const sent = (ns.bodies.at(-1) as { policies: Record<string, unknown>[] }).policies[0]
    expect(sent).not.toHaveProperty('calendar')
    expect(sent).toMatchObject({ algorithm: 'fixed-window', window: 31 * DAY, offset: start % (31 * DAY) })
    expect(sent?.id).toMatch(new RegExp(`@${start}$`))
  })
})

describe('limiter.usage on Durable Objects (issue 40, item 7)', () => {
  it('reads the count a monthly quota holds, beyond the limit after an over-spent settle', async () => {
    const now = Date.parse('2026-11-30T23:00:00Z')
    const store = new DurableObjectStore({ namespace: namespace() as never, now: () => now })
    const limiter = createLimiter({ limits: { limit: 1000, period: 'month', name: 'tokens' }, store })
    const admittedAt = limiter.clock()
    await limiter.consume('k', { cost: 100 })
    await limiter.settle('k', { reserved: 100, actual: 1100, admittedAt })
    expect(await limiter.usage('k')).toEqual([
      { name: 'tokens', limit: 1000, used: 1100, remaining: 0, resetAfter: 3_600_000 },
    ])
  })
})
