import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { unhandledRejections } from '../../../../test/support/unhandled.js'
import type { Outcome } from '../algorithms/index.js'
import { ConfigError, StoreTimeoutError } from '../diagnostics/errors.js'
import type { ObserveEvent } from '../diagnostics/observe.js'
import type { Store } from '../stores/contract.js'
import { MemoryStore } from '../stores/memory-store.js'
import { BreakerOpenError } from './breaker.js'
import { createLimiter, type LimiterOptions } from './limiter.js'

/** An asynchronous store in front of a MemoryStore that can be made to fail or hang, counting calls. */
function switchableStore() {
  const memory = new MemoryStore()
  const state = { mode: 'up' as 'up' | 'down' | 'hang', calls: 0 }
  const answer = <T>(value: () => T): Promise<T> => {
    state.calls++
    if (state.mode === 'down') return Promise.reject(new Error('connection refused'))
    if (state.mode === 'hang') return new Promise<T>(() => {})
    return Promise.resolve().then(value)
  }
  const store: Store = {
    consume: (key, set, cost) => answer(() => memory.consume(key, set, cost) as readonly Outcome[]),
    peek: (key, set) => answer(() => memory.peek(key, set) as readonly Outcome[]),
    reset: (key, set) => answer(() => memory.reset(key, set)),
  }
  return { store, state }
}

function setup(options: Partial<LimiterOptions> = {}) {
  const clock = { now: 1_000_000 }
  const { store, state } = switchableStore()
  const events: ObserveEvent[] = []
  const limiter = createLimiter({
    limits: '100/min',
    store,
    timeout: 50,
    breaker: { failures: 3, cooldown: '5s', now: () => clock.now },
    observe: (event) => {
      events.push(event)
    },
    ...options,
  })
  return { clock, state, limiter, events }
}

describe('circuit breaker', () => {
  const { seen: unhandled, watch, unwatch } = unhandledRejections()
  let warn: { mock: { calls: unknown[][] }; mockRestore(): void }
  beforeEach(() => {
    watch()
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(() => {
    unwatch()
    warn.mockRestore()
    vi.useRealTimers()
    expect(unhandled).toEqual([])
  })

  it('opens after N consecutive failures; then decides without asking the store', async () => {
    const { state, limiter, events } = setup()
    state.mode = 'down'
    for (let i = 0; i < 3; i++)
      expect((await limiter.consume('k')).error).toHaveProperty('message', 'connection refused')
    expect(state.calls).toBe(3)
    expect(events.filter((e) => e.type === 'breaker-open')).toEqual([
      { type: 'breaker-open', failures: 3, cooldownMs: 5000, error: expect.any(Error) },
    ])
    const skipped = await limiter.consume('k')
    expect(skipped).toMatchObject({ allowed: true, source: 'error' })
    expect(skipped.error).toBeInstanceOf(BreakerOpenError)
    expect((skipped.error as Error).message).toMatch(/circuit breaker is open after 3 consecutive store failures/)
    expect(state.calls).toBe(3)
  })

  it('a success in between resets the count: only consecutive failures open it', async () => {
    const { state, limiter, events } = setup()
    for (const mode of ['down', 'down', 'up', 'down', 'down', 'up'] as const) {
      state.mode = mode
      await limiter.consume('k')
    }
    expect(events.some((e) => e.type === 'breaker-open')).toBe(false)
    expect(state.calls).toBe(6)
  })

  it('counts timeouts, and once open answers with no wait', async () => {
    vi.useFakeTimers()
    const { state, limiter } = setup({ onStoreError: 'deny' })
    state.mode = 'hang'
    for (let i = 0; i < 3; i++) {
      const pending = limiter.consume('k')
      await vi.advanceTimersByTimeAsync(50)
      expect((await pending).error).toBeInstanceOf(StoreTimeoutError)
    }
    let settled = false
    const fast = limiter.consume('k').then((d) => {
      settled = true
      return d
    })
    await vi.advanceTimersByTimeAsync(0)
    expect(settled).toBe(true)
    expect(await fast).toMatchObject({ allowed: false, source: 'error', error: expect.any(BreakerOpenError) })
    expect(state.calls).toBe(3)
  })

  it('after the cooldown sends exactly one probe; its success closes the breaker', async () => {
    const { clock, state, limiter, events } = setup()
    state.mode = 'down'
    for (let i = 0; i < 3; i++) await limiter.consume('k')
    state.mode = 'up'
    clock.now += 4999
    await limiter.consume('k')
    expect(state.calls).toBe(3)
    clock.now += 1
    // Two decisions at once: one probe, the other still skips the store.
    const [probe, other] = await Promise.all([limiter.consume('k'), limiter.consume('k')])
    expect(probe).toMatchObject({ source: 'store', allowed: true, remaining: 99 })
    expect(other.error).toBeInstanceOf(BreakerOpenError)
    expect(state.calls).toBe(4)
    expect(events.filter((e) => e.type === 'breaker-close')).toEqual([{ type: 'breaker-close', openMs: 5000 }])
    expect(await limiter.consume('k')).toMatchObject({ source: 'store', remaining: 98 })
    expect(state.calls).toBe(5)
  })

  it('a failed probe opens it for another full cooldown', async () => {
    const { clock, state, limiter, events } = setup()
    state.mode = 'down'
    for (let i = 0; i < 3; i++) await limiter.consume('k')
    clock.now += 5000
    expect((await limiter.consume('k')).error).toHaveProperty('message', 'connection refused')
    expect(state.calls).toBe(4)
    clock.now += 4999
    state.mode = 'up'
    expect((await limiter.consume('k')).error).toBeInstanceOf(BreakerOpenError)
    clock.now += 1
    expect((await limiter.consume('k')).source).toBe('store')
    expect(events.filter((e) => e.type.startsWith('breaker'))).toEqual([
      expect.objectContaining({ type: 'breaker-open' }),
      { type: 'breaker-close', openMs: 10_000 },
    ])
  })

  it('goes to the fallback store while open', async () => {
    const { state, limiter } = setup({ onStoreError: new MemoryStore() })
    state.mode = 'down'
    for (let i = 0; i < 4; i++) await limiter.consume('k')
    const decision = await limiter.consume('k')
    expect(decision).toMatchObject({ source: 'fallback', remaining: 95 })
    expect(decision.error).toBeInstanceOf(BreakerOpenError)
    expect(state.calls).toBe(3)
  })

  it('is on by default (5 failures) and off with false', async () => {
    const on = setup({ breaker: undefined })
    on.state.mode = 'down'
    for (let i = 0; i < 7; i++) await on.limiter.consume('k')
    expect(on.state.calls).toBe(5)
    const off = setup({ breaker: false })
    off.state.mode = 'down'
    for (let i = 0; i < 7; i++) await off.limiter.consume('k')
    expect(off.state.calls).toBe(7)
  })

  it('never opens on a synchronous store: a full MemoryStore keeps limiting the keys it holds', async () => {
    const store = new MemoryStore({ maxKeys: 1 })
    const limiter = createLimiter({ limits: '1/min', store, breaker: { failures: 1, cooldown: '1h' } })
    expect((await limiter.consume('held')).allowed).toBe(true)
    for (let i = 0; i < 10; i++) expect((await limiter.consume(`new-${i}`)).source).toBe('error')
    expect(await limiter.consume('held')).toMatchObject({ allowed: false, source: 'store' })
  })

  it('warns once when decisions start failing and once when they recover', async () => {
    const { clock, state, limiter } = setup()
    state.mode = 'down'
    for (let i = 0; i < 5; i++) await limiter.consume('k')
    state.mode = 'up'
    clock.now += 5000
    await limiter.consume('k')
    state.mode = 'down'
    for (let i = 0; i < 5; i++) await limiter.consume('k')
    state.mode = 'up'
    clock.now += 5000
    await limiter.consume('k')
    const messages = warn.mock.calls.map((call) => String(call[0]))
    expect(messages).toHaveLength(2)
    expect(messages[0]).toMatch(/^\[sluice\] SLUICE_STORE_FAILING: .*connection refused.*allowed without limits/)
    expect(messages[1]).toMatch(/^\[sluice\] SLUICE_STORE_RECOVERED/)
  })

  it('rejects bad options with a ConfigError naming the field', () => {
    const bad: [unknown, string][] = [
      [true, 'breaker'],
      [{ failures: 0 }, 'breaker.failures'],
      [{ failures: 1.5 }, 'breaker.failures'],
      [{ cooldown: '-1s' }, 'breaker.cooldown'],
      [{ cooldown: 0 }, 'breaker.cooldown'],
      [{ now: 5 }, 'breaker.now'],
      [{ threshold: 5 }, 'breaker.threshold'],
    ]
    for (const [breaker, field] of bad) {
      expect(() => createLimiter({ limits: '1/s', breaker: breaker as false })).toThrow(ConfigError)
      try {
        createLimiter({ limits: '1/s', breaker: breaker as false })
      } catch (error) {
        expect((error as ConfigError).field).toBe(field)
      }
    }
  })
})
