import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { unhandledRejections } from '../../../../test/support/unhandled.js'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import { isThenable, type Store } from '../stores/contract.js'
import { MemoryStore } from '../stores/memory-store.js'
import { SketchStore } from '../stores/sketch-store.js'
import type { Adapter } from './common-options.js'
import { createRateLimitHandler, type RateLimitHandler, type RateLimitOptions } from './rate-limit.js'

type Args = [request: { ip?: string; user?: string }]
const adapter: Adapter<Args> = {
  name: '@sluice/test',
  addressSource: 'request.ip',
  address: (r) => r.ip,
  status: () => 200,
}
const build = (options: RateLimitOptions<Args, string>) => createRateLimitHandler(options, adapter)

function configError(fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('option validation', () => {
  it('teaches the sluice name for options of other limiters', () => {
    const error = configError(() => build({ limits: '1/s', windowMs: 60_000 } as RateLimitOptions<Args, string>))
    expect(error.field).toBe('windowMs')
    expect(error.message).toMatch(/^windowMs is not an option of rateLimit\(\): set the window in limits/)
    expect(error.message).toMatch(/known options: limits, store, .*ipv6Subnet/)
    expect(configError(() => build({ limits: '1/s', keyGenerator: () => 'x' } as never)).message).toMatch(/use key:/)
    expect(configError(() => build({ limit: () => 5 } as never)).message).toMatch(
      /^limit is not an option of rateLimit\(\): .*for limits per request, limiter: \(request\) => a limiter/,
    )
  })

  it('rejects an unknown option without a hint, listing the known ones', () => {
    const error = configError(() => build({ limits: '1/s', lmits: '2/s' } as never))
    expect(error).toMatchObject({ field: 'lmits', value: '2/s' })
    expect(error.message).toMatch(/known options:/)
  })

  it('needs limits or a limiter, not both', () => {
    expect(configError(() => build({})).field).toBe('limits')
    const limiter = createLimiter({ limits: '1/s' })
    expect(configError(() => build({ limiter, limits: '2/s' })).message).toMatch(/belongs to the prebuilt limiter/)
    expect(configError(() => build({ limiter: {} as never })).field).toBe('limiter')
  })

  it('checks statusCode, dryRun, headers, cost, message, onLimited and ipv6Subnet', () => {
    expect(configError(() => build({ limits: '1/s', statusCode: 200 })).field).toBe('statusCode')
    expect(configError(() => build({ limits: '1/s', dryRun: 'yes' as never })).field).toBe('dryRun')
    expect(configError(() => build({ limits: '1/s', headers: 'draft-9' as never })).field).toBe('headers')
    expect(configError(() => build({ limits: '10/s', cost: 11 })).message).toMatch(/from 1 to 10/)
    expect(configError(() => build({ limits: '1/s', cost: 0 })).field).toBe('cost')
    expect(configError(() => build({ limits: '1/s', message: 'no', onLimited: () => 'x' })).field).toBe('message')
    expect(configError(() => build({ limits: '1/s', onLimited: 'x' as never })).field).toBe('onLimited')
    expect(configError(() => build({ limits: '1/s', ipv6Subnet: 80 })).field).toBe('ipv6Subnet')
    expect(configError(() => build({ limits: '1/s', key: () => 'k', ipv6Subnet: 48 })).message).toMatch(
      /default key only/,
    )
  })

  it('a limiter function: no limiter of its own, its picks checked when first picked', async () => {
    const small = createLimiter({ limits: '2/min' })
    const handler = build({ limiter: () => small, cost: 3 })
    expect(handler.limiter).toBeUndefined()
    // A fixed cost beyond what the picked limiter can ever admit fails the request, not the build.
    await expect(handler.plan({ ip: '192.0.2.1' })).rejects.toMatchObject({ field: 'cost', value: 3 })
    const sketched = createLimiter({ limits: '2/min', store: new SketchStore() })
    const refunding = build({ limiter: () => sketched, skipFailedRequests: true })
    await expect(refunding.plan({ ip: '192.0.2.1' })).rejects.toThrow(
      /^limiter returned a limiter whose store cannot refund, which skipFailedRequests needs/,
    )
  })

  it('passes limiter errors through with their field', () => {
    expect(configError(() => build({ limits: '0/s' })).field).toBe('limits[0].limit')
  })
})

describe('plan', () => {
  const clock = () => {
    const time = { now: 1_800_000_000_000 }
    return { time, store: new MemoryStore({ now: () => time.now }) }
  }

  it('continues, then denies with Retry-After and the problem body', async () => {
    const { store } = clock()
    const handler = build({ limits: { limit: 1, window: '10s', algorithm: 'fixed-window' }, store })
    const first = await handler.plan({ ip: '::ffff:10.0.0.1' })
    expect(first).toMatchObject({ kind: 'continue', delay: 0, decision: { key: '10.0.0.1', allowed: true } })
    const second = await handler.plan({ ip: '10.0.0.1' })
    if (second.kind !== 'deny') throw new Error(second.kind)
    expect(second.status).toBe(429)
    expect(second.headers.map((h) => `${h.name}: ${h.value}`)).toEqual([
      'RateLimit-Policy: "1-per-10s";q=1;w=10',
      'RateLimit: "1-per-10s";r=0;t=10',
      'Retry-After: 10',
    ])
    expect(second.response).toMatchObject({ contentType: 'application/problem+json' })
  })

  it('runs skip, key and cost in order, whether each answers at once or with a promise', async () => {
    const { store } = clock()
    for (const async of [false, true]) {
      const calls: string[] = []
      const answer = <T>(name: string, value: T) => {
        calls.push(name)
        return async ? Promise.resolve(value) : value
      }
      const handler = build({
        limits: '2/s',
        store,
        skip: (r) => answer('skip', r.user === 'vip'),
        key: (r) => answer('key', `${async}:${r.user}`),
        cost: () => answer('cost', 2),
      })
      expect(await handler.plan({ user: 'vip' })).toMatchObject({ kind: 'skip' })
      expect(await handler.plan({ user: 'a' })).toMatchObject({ kind: 'continue', decision: { remaining: 0 } })
      expect(await handler.plan({ user: 'a' })).toMatchObject({ kind: 'deny' })
      expect(calls).toEqual(['skip', 'skip', 'key', 'cost', 'skip', 'key', 'cost'])
    }
  })

  it('answers at once, without a promise, when the options and the store all answer at once', async () => {
    const { store } = clock()
    const handler = build({ limits: '2/s', store, key: (r) => r.user ?? 'anonymous' })
    const first = handler.plan({ user: 'a' })
    expect(isThenable(first)).toBe(false)
    expect(first).toMatchObject({ kind: 'continue', decision: { remaining: 1 } })
    handler.plan({ user: 'a' })
    expect(handler.plan({ user: 'a' })).toBeInstanceOf(Promise) // a denial builds its body asynchronously
    expect(isThenable(build({ limits: '2/s', store, key: async () => 'b' }).plan({}))).toBe(true)
    const slowStore: Store = {
      consume: async (key, set, cost) => store.consume(key, set, cost),
      peek: (key, set) => store.peek(key, set),
      reset: () => undefined,
    }
    const slow = build({ limits: '2/s', store: slowStore, key: () => 'c' }).plan({})
    expect(isThenable(slow)).toBe(true)
    expect(await slow).toMatchObject({ kind: 'continue', decision: { key: 'c', remaining: 1 } })
  })

  it('rejects, never throws, when an option throws, rejects or returns no cost', async () => {
    const fails = (options: Partial<RateLimitOptions<Args, string>>) =>
      build({ limits: '1/s', key: () => 'k', ...options }).plan({})
    const thrown = new Error('thrown')
    const rejected = new Error('rejected')
    for (const name of ['skip', 'key', 'cost'] as const) {
      await expect(
        fails({
          [name]: () => {
            throw thrown
          },
        }),
      ).rejects.toBe(thrown)
      await expect(fails({ [name]: () => Promise.reject(rejected) })).rejects.toBe(rejected)
    }
    await expect(fails({ cost: () => Promise.resolve(undefined as never) })).rejects.toThrow(ConfigError)
  })

  it('fails a request without an address with a ClientAddressError', async () => {
    await expect(build({ limits: '1/s' }).plan({})).rejects.toThrow(/request\.ip is undefined.*Pass a key function/)
    await expect(build({ limits: '1/s' }).plan({ ip: 'unknown' })).rejects.toThrow(/request\.ip is "unknown"/)
  })

  it('dryRun reports a denial but continues, without Retry-After', async () => {
    const { store } = clock()
    const handler = build({ limits: '1/s', store, dryRun: true, key: (r) => r.user ?? '' })
    await handler.plan({ user: 'a' })
    const plan = await handler.plan({ user: 'a' })
    expect(plan).toMatchObject({ kind: 'continue', decision: { allowed: false } })
    if (plan.kind !== 'continue') throw new Error(plan.kind)
    expect(plan.headers.map((h) => h.name)).toEqual(['RateLimit-Policy', 'RateLimit'])
  })

  it('binds onLimited to the request and the decision', async () => {
    const { store } = clock()
    const handler = build({
      limits: '1/s',
      store,
      key: (r) => r.user ?? '',
      onLimited: (r, d) => `${r.user}:${d.retryAfter}`,
    })
    await handler.plan({ user: 'b' })
    const plan = await handler.plan({ user: 'b' })
    if (plan.kind !== 'deny' || typeof plan.response !== 'function') throw new Error('expected a custom denial')
    // The first request's 100 ms sub-window (of ten, the default) leaves the window at 1100 ms.
    expect(plan.response()).toBe('b:1100')
  })

  it('holds a shaped request for its delay', async () => {
    const handler = build({
      limits: { limit: 10, window: '1s', algorithm: 'gcra', burst: 1 },
      maxDelay: 200,
      key: () => 'k',
    })
    await handler.plan({})
    const started = performance.now()
    const plan = await handler.plan({})
    expect(plan).toMatchObject({ kind: 'continue' })
    if (plan.kind !== 'continue') throw new Error(plan.kind)
    expect(plan.delay).toBeGreaterThan(50)
    expect(performance.now() - started).toBeGreaterThanOrEqual(plan.delay - 5)
  })
})

describe('settle: skipSuccessfulRequests and skipFailedRequests', () => {
  const limits = { limit: 3, window: '1m', algorithm: 'fixed-window' } as const
  const settleOf = (plan: Awaited<ReturnType<RateLimitHandler<Args, string>['plan']>>) => {
    if (plan.kind !== 'continue') throw new Error(plan.kind)
    return plan.settle
  }
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  beforeEach(watch)
  afterEach(unwatch)

  it('validates the options, naming the field', () => {
    expect(configError(() => build({ limits, skipFailedRequests: 1 as never })).field).toBe('skipFailedRequests')
    expect(
      configError(() => build({ limits, skipFailedRequests: true, requestWasSuccessful: 'no' as never })).field,
    ).toBe('requestWasSuccessful')
    const both = configError(() => build({ limits, skipSuccessfulRequests: true, skipFailedRequests: true }))
    expect(both.message).toMatch(/^skipSuccessfulRequests cannot be used with skipFailedRequests/)
    const sketch = configError(() => build({ limits, store: new SketchStore(), skipFailedRequests: true }))
    expect(sketch.message).toMatch(/^skipFailedRequests needs a store that can refund/)
  })

  it('gives back exactly once per request, only for the outcome asked for', async () => {
    const limiter = createLimiter({ limits, store: new MemoryStore() })
    const handler = build({
      limiter,
      skipFailedRequests: true,
      key: () => 'k',
      requestWasSuccessful: (r) => r.user !== 'bad',
    })
    const good = settleOf(await handler.plan({ user: 'good' }))
    const bad = settleOf(await handler.plan({ user: 'bad' }))
    const abandoned = settleOf(await handler.plan({ user: 'good' }))
    expect((await limiter.peek('k')).remaining).toBe(0)
    good?.(true)
    bad?.(true)
    bad?.(false)
    bad?.(true)
    await Promise.resolve()
    expect((await limiter.peek('k')).remaining).toBe(1)
    abandoned?.(false)
    expect((await limiter.peek('k')).remaining).toBe(2)
  })

  it('has nothing to settle without the options, or when the store did not count the request', async () => {
    const plain = build({ limits, key: () => 'k' })
    expect(settleOf(await plain.plan({}))).toBeUndefined()
    const down = {
      consume: () => Promise.reject(new Error('down')),
      peek: () => [],
      reset: () => undefined,
      refund() {},
    }
    for (const onStoreError of ['allow', new MemoryStore()] as const) {
      const handler = build({ limits, store: down, onStoreError, skipSuccessfulRequests: true, key: () => 'k' })
      const plan = await handler.plan({})
      expect(plan).toMatchObject({ kind: 'continue', decision: { allowed: true } })
      expect(settleOf(plan)).toBeUndefined()
    }
  })

  it('drops a refund that fails, and a requestWasSuccessful that throws or rejects, leaving nothing unhandled', async () => {
    const store = new MemoryStore()
    const failing = { ...bound(store), refund: () => Promise.reject(new Error('refund failed')) }
    const handler = build({ limits, store: failing, skipSuccessfulRequests: true, key: () => 'k' })
    settleOf(await handler.plan({}))?.(true)
    for (const requestWasSuccessful of [
      () => {
        throw new Error('sync')
      },
      () => Promise.reject(new Error('async')),
    ]) {
      const judged = build({ limits, store, skipSuccessfulRequests: true, key: () => 'j', requestWasSuccessful })
      const settle = settleOf(await judged.plan({}))
      expect(() => settle?.(true)).not.toThrow()
    }
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(unhandled).toEqual([])
    expect((await createLimiter({ limits, store }).peek('j')).remaining).toBe(1)
  })
})

/** A store's methods bound to it, to spread into a test double. */
function bound(store: MemoryStore) {
  return {
    consume: store.consume.bind(store),
    peek: store.peek.bind(store),
    reset: store.reset.bind(store),
  }
}
