// RateLimiterObject in Node, on a storage of our own with no input gate: the object's own logic
// must keep a key's decisions in order. The workerd tests (test/edge/durable-object.test.ts) run
// it on the real runtime.
import { type Policy, parsePolicies } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { FakeStorage } from './fake-storage.test-util.js'
import { RateLimiterObject } from './object.js'
import { type LimiterRequest, PROTOCOL_URL } from './protocol.js'

const T0 = Date.UTC(2026, 0, 1)
const { policies } = parsePolicies([{ limit: 10, window: 1000, algorithm: 'fixed-window' }])

function setup() {
  const storage = new FakeStorage()
  const object = new RateLimiterObject({ storage })
  const send = async (body: unknown) => {
    const response = await object.fetch(new Request(PROTOCOL_URL, { method: 'POST', body: JSON.stringify(body) }))
    return { status: response.status, body: response.status === 200 ? await response.json() : await response.text() }
  }
  const call = async (request: Partial<LimiterRequest>) =>
    (await send({ op: 'consume', key: 'k', policies, cost: 1, now: T0, ...request })).body as Outcome[] | null
  return { storage, object, send, call }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(T0)
})

afterEach(() => {
  vi.useRealTimers()
})

describe('RateLimiterObject', () => {
  it('decides a cold key exactly when calls interleave with its first read', async () => {
    const { storage, call } = setup()
    const outcomes = (await Promise.all(Array.from({ length: 25 }, () => call({})))).map((o) => o?.[0])
    expect(outcomes.filter((o) => o?.allowed).length).toBe(10)
    expect(outcomes.map((o) => o?.remaining).slice(0, 10)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    expect(storage.reads).toBe(1)
  })

  it('reads a key from storage once, then decides from memory, writing each change', async () => {
    const { storage, call } = setup()
    await call({ cost: 3 })
    await call({ cost: 3 })
    expect(storage.reads).toBe(1)
    const stored = storage.data.get('k:k') as { expiries: Record<string, number>; sweepAt: number }
    expect(stored.expiries).toEqual({ [policies[0]!.id]: T0 + 1000 })
    expect(stored.sweepAt).toBe(T0 + 1000 + 60_000)
    expect(storage.alarm).toBe(T0 + 61_000)
  })

  it('starts from storage after a restart', async () => {
    const first = setup()
    await first.call({ cost: 7 })
    const second = new RateLimiterObject({ storage: first.storage })
    const response = await second.fetch(
      new Request(PROTOCOL_URL, {
        method: 'POST',
        body: JSON.stringify({ op: 'peek', key: 'k', policies, now: T0 + 10 }),
      }),
    )
    expect(((await response.json()) as Outcome[])[0]?.remaining).toBe(3)
  })

  it('answers 400 to a malformed call', async () => {
    const { send } = setup()
    expect(await send('nope')).toEqual({ status: 400, body: 'the body must be a JSON object' })
    expect((await send({ op: 'drop', key: 'k', policies })).status).toBe(400)
    expect((await send({ op: 'peek', key: 1, policies })).body).toBe('key must be a string')
    expect((await send({ op: 'peek', key: 'k', policies: [] })).body).toBe('policies must be a non-empty array')
    expect((await send({ op: 'consume', key: 'k', policies, cost: 'x' })).body).toBe('cost must be a finite number')
    // A policy missing a number its transition reads would decide on NaN, which limits nothing.
    const { offset: _, ...withoutOffset } = policies[0] as Policy
    expect((await send({ op: 'peek', key: 'k', policies: [withoutOffset] })).body).toBe(
      'policies[0].offset must be a finite number',
    )
    expect((await send({ op: 'peek', key: 'k', policies: [{ ...policies[0], algorithm: 'leaky' }] })).body).toBe(
      'policies[0].algorithm must be one of fixed-window, sliding-window, sliding-log, token-bucket, gcra',
    )
    expect((await send({ op: 'peek', key: 'k', policies: [null] })).body).toBe('policies[0] must be a policy object')
  })

  it("starts fixed windows at the policy's offset, as a calendar period is resolved", async () => {
    const { call } = setup()
    // Windows of 1000 ms starting 300 ms after each whole second (T0 is one).
    const shifted = [{ ...(policies[0] as Policy), offset: 300, id: 'fixed@300' }]
    expect((await call({ policies: shifted, cost: 10, now: T0 + 299 }))?.[0]).toMatchObject({
      remaining: 0,
      resetAfter: 1,
    })
    expect((await call({ policies: shifted, now: T0 + 299 }))?.[0]).toMatchObject({ allowed: false, retryAfter: 1 })
    expect((await call({ policies: shifted, now: T0 + 300 }))?.[0]).toMatchObject({
      allowed: true,
      remaining: 9,
      resetAfter: 1000,
    })
  })

  it('deletes a key whose last policy is reset, and what an alarm finds past its sweep time', async () => {
    const { storage, object, call } = setup()
    await call({ key: 'reset' })
    await call({ key: 'reset', op: 'reset' })
    expect(storage.data.has('k:reset')).toBe(false)

    // 1500 keys (two pages of the sweep): the first 1000 written at T0, the rest 30 s later.
    for (let i = 0; i < 1500; i++) {
      if (i === 1000) vi.setSystemTime(T0 + 30_000)
      await call({ key: `key-${String(i).padStart(4, '0')}`, now: Date.now() })
    }
    expect(storage.alarm).toBe(T0 + 61_000)
    vi.setSystemTime(T0 + 61_000)
    await object.alarm()
    expect(storage.data.size).toBe(500)
    expect(storage.alarm).toBe(T0 + 91_000)
    vi.setSystemTime(T0 + 91_000)
    await object.alarm()
    expect(storage.data.size).toBe(0)
    // Nothing left: no alarm is set again (the runtime clears the one that fired).
    expect(storage.alarm).toBe(T0 + 91_000)
  })

  it('warms a bucket up across JSON: a cold unit of 10/s over 3 s costs 293 ms, not 100', async () => {
    const { call, send } = setup()
    const warming = parsePolicies([{ limit: 10, window: 1000, algorithm: 'gcra', burst: 1, warmup: '3s' }]).policies
    expect((await call({ policies: warming }))?.[0]).toMatchObject({ allowed: true })
    expect((await call({ policies: warming, now: T0 + 293 }))?.[0]).toMatchObject({ allowed: false, retryAfter: 1 })
    expect((await call({ policies: warming, now: T0 + 294 }))?.[0]).toMatchObject({ allowed: true })
    const bad = { ...(warming[0] as Policy), coldFactor: 1 }
    expect((await send({ op: 'peek', key: 'k', policies: [bad] })).body).toBe(
      'policies[0].coldFactor must be a finite number above 1 with warmup',
    )
  })
})
