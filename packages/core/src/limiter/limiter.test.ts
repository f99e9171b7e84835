import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { clockedStore } from '../../../../test/support/clock.js'
import { unhandledRejections } from '../../../../test/support/unhandled.js'
import type { Outcome } from '../algorithms/index.js'
import { ConfigError, StoreFullError, StoreTimeoutError } from '../diagnostics/errors.js'
import { ALGORITHMS } from '../policies/policy.js'
import { isThenable, type Store } from '../stores/contract.js'
import { FilteredStore } from '../stores/filtered-store.js'
import { MemoryStore } from '../stores/memory-store.js'
import { SketchStore } from '../stores/sketch-store.js'
import { consumeNowOf, createLimiter, type Limiter } from './limiter.js'

describe('composition', () => {
  it("gives a MemoryStore's decisions as any store's: the entries its meters label equal toDecision's copies", async () => {
    // A MemoryStore of its own class is asked for labelled outcomes; a wrapper of one, for plain ones.
    for (const algorithm of ALGORITHMS) {
      for (const limits of [
        [{ limit: 3, window: '1s', algorithm }],
        [
          { limit: 4, window: '1m', algorithm },
          { limit: 2, window: '1s', algorithm, name: 'burst' },
        ],
        [
          { limit: 5, window: '1m', algorithm },
          { limit: 3, window: '10s', algorithm },
          { limit: 2, window: '1s', algorithm },
        ],
      ]) {
        const clock = { now: 1_020_000 }
        const direct = new MemoryStore({ now: () => clock.now })
        const inner = new MemoryStore({ now: () => clock.now })
        const wrapped: Store = {
          consume: (key, set, cost) => inner.consume(key, set, cost),
          peek: (key, set) => inner.peek(key, set),
          reset: (key, set) => inner.reset(key, set),
          now: () => inner.now(),
        }
        const labelled = createLimiter({ limits, store: direct })
        const copied = createLimiter({ limits, store: wrapped })
        for (let i = 0; i < 12; i++) {
          clock.now += 150
          const cost = i % 4 === 3 ? 2 : 1
          const [a, b] = [await labelled.consume('k', { cost }), await copied.consume('k', { cost })]
          expect(a).toStrictEqual(b)
          expect(a.policies.map((p) => Object.keys(p))).toStrictEqual(b.policies.map((p) => Object.keys(p)))
        }
      }
    }
  })

  it('admits 100/min plus 2/s all-or-nothing and names the binding policy', async () => {
    const { clock, store } = clockedStore()
    clock.now = 1_020_000 // the start of a minute
    const limiter = createLimiter({
      limits: [
        { limit: 5, window: '1m', algorithm: 'fixed-window' },
        { limit: 2, window: '1s', algorithm: 'fixed-window' },
      ],
      store,
    })
    const first = await limiter.consume('u')
    expect(first).toMatchObject({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetAfter: 1000,
      retryAfter: 0,
      source: 'store',
      key: 'u',
    })
    expect(first.policies.map((p) => [p.name, p.remaining])).toEqual([
      ['5-per-1m', 4],
      ['2-per-1s', 1],
    ])
    await limiter.consume('u')
    const denied = await limiter.consume('u')
    expect(denied).toMatchObject({ allowed: false, limit: 2, remaining: 0, retryAfter: 1000 })
    expect(denied.policies.map((p) => p.allowed)).toEqual([true, false])
    // The denied request took nothing from the minute policy.
    expect((await limiter.peek('u')).policies[0]?.remaining).toBe(3)

    clock.now += 1000
    await limiter.consume('u')
    await limiter.consume('u')
    clock.now += 1000
    await limiter.consume('u')
    const minuteSpent = await limiter.consume('u')
    expect(minuteSpent).toMatchObject({ allowed: false, limit: 5, remaining: 0 })
    expect(minuteSpent.retryAfter).toBe(58_000)
    expect(minuteSpent.policies.map((p) => p.allowed)).toEqual([false, true])
  })

  it('reports the longest wait when several policies deny', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({
      limits: [
        { limit: 1, window: 1000, algorithm: 'gcra' },
        { limit: 1, window: 60_000, algorithm: 'gcra' },
      ],
      store,
    })
    await limiter.consume('k')
    const denied = await limiter.consume('k')
    expect(denied.retryAfter).toBe(60_000)
    expect(denied.limit).toBe(1)
    expect(denied.resetAfter).toBe(60_000)
  })

  it('keeps keys apart, and limiters with different limits apart on one store', async () => {
    const { store } = clockedStore()
    const strict = createLimiter({ limits: '1/s', store })
    const loose = createLimiter({ limits: '5/s', store })
    expect((await strict.consume('a')).allowed).toBe(true)
    expect((await strict.consume('a')).allowed).toBe(false)
    expect((await strict.consume('b')).allowed).toBe(true)
    expect((await loose.consume('a')).remaining).toBe(4)
  })

  it('charges cost to every policy', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({ limits: ['10/s', '100/min'], store })
    const decision = await limiter.consume('k', { cost: 4 })
    expect(decision.policies.map((p) => p.remaining)).toEqual([6, 96])
    expect((await limiter.consume('k', { cost: 7 })).allowed).toBe(false)
    expect((await limiter.consume('k', { cost: 6 })).remaining).toBe(0)
  })

  it('peeks without consuming and resets', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({ limits: '2/s', store })
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 2, resetAfter: 0 })
    await limiter.consume('k')
    await limiter.consume('k')
    const peeked = await limiter.peek('k')
    expect(peeked).toMatchObject({ allowed: false, remaining: 0 })
    expect(peeked.retryAfter).toBeGreaterThan(0)
    expect(await limiter.peek('k')).toEqual(peeked)
    await limiter.reset('k')
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 2 })
    expect(store.size).toBe(0)
  })

  it('applies a limiter-wide maxDelay to the policies that can shape', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({
      limits: [{ limit: 10, window: 1000, algorithm: 'gcra', burst: 1 }, '100/min'],
      maxDelay: 250,
      store,
    })
    expect(limiter.policies[0]?.maxDelay).toBe(250)
    expect(limiter.policies[1]?.maxDelay).toBe(0)
    const delays = []
    for (let i = 0; i < 5; i++) delays.push(await limiter.consume('k'))
    expect(delays.map((d) => [d.allowed, d.delay])).toEqual([
      [true, 0],
      [true, 100],
      [true, 200],
      [false, 0],
      [false, 0],
    ])
    expect(delays[3]?.retryAfter).toBe(50)
  })
})

/** A store whose every call does what the test says. */
function faultyStore(behaviour: () => Promise<readonly Outcome[]> | readonly Outcome[]): Store & { calls: number } {
  const store = {
    calls: 0,
    consume: () => {
      store.calls++
      return behaviour()
    },
    peek: () => behaviour(),
    reset: () => undefined,
  }
  return store
}

describe('when the store fails', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  beforeEach(watch)
  afterEach(() => {
    unwatch()
    vi.useRealTimers()
  })

  const failures = {
    throws: () => {
      throw new Error('boom')
    },
    rejects: () => Promise.reject(new Error('connection refused')),
    'never answers': () => new Promise<readonly Outcome[]>(() => {}),
  }

  for (const [how, behaviour] of Object.entries(failures)) {
    it(`allows with 'allow' when the store ${how}`, async () => {
      const limiter = createLimiter({ limits: ['10/s', '5/min'], store: faultyStore(behaviour), timeout: 50 })
      const decision = await limiter.consume('k')
      expect(decision).toMatchObject({ allowed: true, source: 'error', limit: 5, remaining: 5, retryAfter: 0 })
      expect(decision.error).toBeInstanceOf(how === 'never answers' ? StoreTimeoutError : Error)
    })

    it(`denies with 'deny' when the store ${how}`, async () => {
      const limiter = createLimiter({
        limits: '10/s',
        store: faultyStore(behaviour),
        onStoreError: 'deny',
        timeout: 50,
      })
      expect(await limiter.consume('k')).toMatchObject({
        allowed: false,
        source: 'error',
        remaining: 0,
        retryAfter: 1000,
      })
      expect(await limiter.peek('k')).toMatchObject({ allowed: false, source: 'error' })
    })

    it(`asks the fallback store when the store ${how}`, async () => {
      const { store: fallback } = clockedStore()
      const limiter = createLimiter({
        limits: '2/s',
        store: faultyStore(behaviour),
        onStoreError: fallback,
        timeout: 50,
      })
      const decisions = [await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k')]
      expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
        [true, 'fallback'],
        [true, 'fallback'],
        [false, 'fallback'],
      ])
    })
  }

  it('answers by the timeout, however long the store takes, and swallows its late failure', async () => {
    vi.useFakeTimers()
    let fail: (error: Error) => void = () => {}
    const slow = faultyStore(() => new Promise((_, reject) => (fail = reject)))
    const limiter = createLimiter({ limits: '10/s', store: slow, timeout: 200 })
    let settled = false
    const pending = limiter.consume('k').then((d) => {
      settled = true
      return d
    })
    await vi.advanceTimersByTimeAsync(199)
    expect(settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(await pending).toMatchObject({ allowed: true, source: 'error' })
    fail(new Error('late'))
    vi.useRealTimers()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(unhandled).toEqual([])
  })

  it('goes back to the primary store as soon as it answers again', async () => {
    let healthy = false
    const { store: primary } = clockedStore()
    const flaky: Store = {
      consume: (key, set, cost) => (healthy ? primary.consume(key, set, cost) : Promise.reject(new Error('down'))),
      peek: (key, set) => primary.peek(key, set),
      reset: (key, set) => primary.reset(key, set),
    }
    const limiter = createLimiter({ limits: '10/s', store: flaky, onStoreError: 'deny' })
    expect((await limiter.consume('k')).source).toBe('error')
    healthy = true
    expect(await limiter.consume('k')).toMatchObject({ source: 'store', allowed: true, remaining: 9 })
  })

  it('reports both errors when the fallback fails too, and denies', async () => {
    const limiter = createLimiter({
      limits: '10/s',
      store: faultyStore(failures.rejects),
      onStoreError: faultyStore(failures.throws),
    })
    const decision = await limiter.consume('k')
    expect(decision).toMatchObject({ allowed: false, source: 'error' })
    expect((decision.error as AggregateError).errors.map((e: Error) => e.message)).toEqual([
      'connection refused',
      'boom',
    ])
  })

  it('turns a full MemoryStore into the onStoreError decision', async () => {
    const clock = { now: 0 }
    const store = new MemoryStore({ maxKeys: 2, now: () => clock.now })
    const limiter = createLimiter({ limits: '1/min', store, onStoreError: 'deny' })
    await limiter.consume('a')
    await limiter.consume('b')
    const decision = await limiter.consume('c')
    expect(decision).toMatchObject({ allowed: false, source: 'error' })
    expect(decision.error).toBeInstanceOf(StoreFullError)
  })
})

describe('a denied request', () => {
  it('reports the untouched quota of the policies that would have admitted it', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({ limits: ['100/min', '2/s'], store })
    await limiter.consume('k')
    await limiter.consume('k')
    const denied = await limiter.consume('k')
    expect(denied.policies.map((p) => [p.allowed, p.remaining])).toEqual([
      [true, 98],
      [false, 0],
    ])
  })
})

describe('an asynchronous store from another promise library', () => {
  /** A thenable that is not a native Promise, as Bluebird or another realm's promises are. */
  const thenable = <T>(settle: (resolve: (value: T) => void) => void): PromiseLike<T> => ({
    // biome-ignore lint/suspicious/noThenProperty: the point is to be a non-native thenable
    then: (onFulfilled, onRejected) => new Promise<T>(settle).then(onFulfilled, onRejected),
  })

  it('is awaited like a Promise, and timed out like one', async () => {
    const { store: memory } = clockedStore()
    const answering: Store = {
      consume: (key, set, cost) => thenable((resolve) => resolve(memory.consume(key, set, cost))),
      peek: (key, set) => memory.peek(key, set),
      reset: () => undefined,
    }
    const limiter = createLimiter({ limits: '2/s', store: answering })
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, source: 'store' })

    const silent: Store = { ...answering, consume: () => thenable(() => {}) }
    const stalled = createLimiter({ limits: '2/s', store: silent, timeout: 30 })
    const decision = await stalled.consume('k')
    expect(decision).toMatchObject({ allowed: true, source: 'error' })
    expect(decision.error).toBeInstanceOf(StoreTimeoutError)
  })
})

describe('refund', () => {
  it('gives back what a consume took, validating key and cost as consume does', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({ limits: { limit: 3, window: '1m', algorithm: 'fixed-window' }, store })
    expect(limiter.canRefund).toBe(true)
    await limiter.consume('k', { cost: 3 })
    await limiter.refund('k', { cost: 2 })
    expect((await limiter.peek('k')).remaining).toBe(2)
    await limiter.refund('k')
    expect((await limiter.peek('k')).remaining).toBe(3)
    await expect(limiter.refund('k', { cost: 4 })).rejects.toThrow(/^cost must be a whole number from 1 to 3/)
    await expect(limiter.refund('k', { cost: null as never })).rejects.toThrow(ConfigError)
    await expect(limiter.refund(7 as never)).rejects.toThrow(/^key must be a string/)
    // Nothing to give back: no state is created.
    await limiter.refund('unknown')
    expect(store.size).toBe(1)
  })

  it('rejects for a store without refund, which the limiter reports up front', async () => {
    for (const store of [new SketchStore(), new FilteredStore({ store: new MemoryStore(), threshold: 1 })]) {
      const limiter = createLimiter({ limits: '10/s', store })
      expect(limiter.canRefund).toBe(false)
      await expect(limiter.refund('k')).rejects.toThrow(/^store cannot refund/)
    }
  })

  it("rejects with the store's error or a timeout: no fallback decides a refund", async () => {
    const failing: Store = {
      ...faultyStore(() => []),
      refund: () => Promise.reject(new Error('redis down')),
    }
    await expect(createLimiter({ limits: '1/s', store: failing, onStoreError: 'deny' }).refund('k')).rejects.toThrow(
      'redis down',
    )
    const stalled: Store = { ...failing, refund: () => new Promise<void>(() => {}) }
    await expect(createLimiter({ limits: '1/s', store: stalled, timeout: 20 }).refund('k')).rejects.toBeInstanceOf(
      StoreTimeoutError,
    )
  })
})

describe('the promises consume and peek answer with', () => {
  it('are native, holding the decision, whether the store answers at once or with a promise', async () => {
    const { store } = clockedStore()
    const synchronous = createLimiter({ limits: '2/s', store })
    const asynchronous = createLimiter({
      limits: '3/s',
      store: {
        consume: async (key, set, cost) => store.consume(key, set, cost),
        peek: async (key, set) => store.peek(key, set),
        reset: () => undefined,
      },
    })
    for (const [limiter, limit] of [
      [synchronous, 2],
      [asynchronous, 3],
    ] as const) {
      const consumed = limiter.consume('k')
      const peeked = limiter.peek('k')
      expect(consumed).toBeInstanceOf(Promise)
      expect(peeked).toBeInstanceOf(Promise)
      expect(await consumed).toMatchObject({ allowed: true, limit, remaining: limit - 1, source: 'store' })
      expect(await peeked).toMatchObject({ allowed: true, limit, remaining: limit - 1 })
      await expect(limiter.consume('k', { cost: 4 })).rejects.toThrow(/cost must be a whole number/)
    }
  })
})

describe('consumeNowOf', () => {
  it('decides at once on a synchronous store, and counts as consume does', async () => {
    const { store } = clockedStore()
    const limiter = createLimiter({ limits: '2/s', store })
    const consumeNow = consumeNowOf(limiter)
    const decision = consumeNow('k')
    expect(isThenable(decision)).toBe(false)
    expect(decision).toMatchObject({ allowed: true, remaining: 1, source: 'store' })
    expect(consumeNow('k', { cost: 1 })).toMatchObject({ allowed: true, remaining: 0 })
    expect(await limiter.consume('k')).toMatchObject({ allowed: false })
  })

  it('throws what consume rejects with, and answers with a promise when the store does', async () => {
    const { store } = clockedStore()
    const consumeNow = consumeNowOf(createLimiter({ limits: '2/s', store }))
    expect(() => consumeNow(7 as never)).toThrow(/key must be a string/)
    expect(() => consumeNow('k', { cost: 3 })).toThrow(/cost must be a whole number from 1 to 2/)
    const asynchronous: Store = {
      consume: async (key, set, cost) => store.consume(key, set, cost),
      peek: (key, set) => store.peek(key, set),
      reset: () => undefined,
    }
    const answer = consumeNowOf(createLimiter({ limits: '2/s', store: asynchronous }))('k')
    expect(isThenable(answer)).toBe(true)
    expect(await answer).toMatchObject({ allowed: true, remaining: 1 })
  })

  it('falls back to consume for a limiter that createLimiter did not make', async () => {
    const made = createLimiter({ limits: '2/s' })
    const wrapped: Limiter = { ...made, consume: (key, options) => made.consume(`tenant:${key}`, options) }
    const answer = consumeNowOf(wrapped)('k')
    expect(isThenable(answer)).toBe(true)
    expect(await answer).toMatchObject({ key: 'tenant:k', remaining: 1 })
  })
})

/** Issue 40, item 6: rate-limiter-flexible's `consume(key, points)` in plain JavaScript. */
describe('a number where the options go', () => {
  it('is a ConfigError naming the options, for consume, refund, penalty and acquire: never a silent cost of 1', async () => {
    const limiter = createLimiter({ limits: '10/min' })
    const plain = limiter as unknown as Record<string, (key: string, options: unknown) => Promise<unknown>>
    for (const method of ['consume', 'refund', 'penalty', 'acquire']) {
      const error = await plain[method]?.('k', 3).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ConfigError)
      expect(error).toMatchObject({ field: 'options', value: 3 })
      expect((error as Error).message).toMatch(/\{ cost: 3 \}/)
    }
    expect((await limiter.peek('k')).remaining).toBe(10) // nothing was taken
    expect((await limiter.consume('k', { cost: 3 })).remaining).toBe(7)
    expect((await limiter.consume('k', undefined)).remaining).toBe(6)
  })
})
