// DurableObjectStore in Node, on a namespace of RateLimiterObjects over in-memory storage: the
// routing, the clock it sends and what it does with an error. The workerd tests run it for real.
import { parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { FakeStorage } from './fake-storage.test-util.js'
import { RateLimiterObject } from './object.js'
import { DurableObjectStore } from './store.js'

/** A namespace whose objects are RateLimiterObjects in this process, one per name. */
function namespace() {
  const objects = new Map<string, RateLimiterObject>()
  const bodies: unknown[] = []
  return {
    objects,
    bodies,
    idFromName: (name: string) => name,
    get: (id: unknown) => ({
      fetch: async (url: string, init?: RequestInit) => {
        bodies.push(JSON.parse(String(init?.body)))
        const name = id as string
        if (!objects.has(name)) objects.set(name, new RateLimiterObject({ storage: new FakeStorage() }))
        return (objects.get(name) as RateLimiterObject).fetch(new Request(url, init))
      },
    }),
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
