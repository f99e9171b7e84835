import { describe, expect, it } from 'vitest'
import { clockedStore } from '../../../../test/support/clock.js'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import { SketchStore } from '../stores/sketch-store.js'
import { parsePolicy } from './policy.js'

const T0 = 1_700_000_000_123 // 123 ms into an aligned second, 1_700_000_000_000 being a multiple of 1000

function configErrorOf(attempt: () => unknown): ConfigError {
  try {
    attempt()
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('no ConfigError')
}

describe("fixed windows from each key's first request (start: 'first-request')", () => {
  it('opens a window at the first request and the next at the first request after it ended', async () => {
    const { clock, store } = clockedStore(T0)
    const limiter = createLimiter({
      limits: { limit: 2, window: 1000, algorithm: 'fixed-window', start: 'first-request' },
      store,
    })
    clock.now = T0 + 500
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, resetAfter: 1000 })
    clock.now = T0 + 900 // past the aligned boundary at T0 + 877: still the same window
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0, resetAfter: 600 })
    clock.now = T0 + 1499
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfter: 1 })
    clock.now = T0 + 1500
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, resetAfter: 1000 })
    // Idle past the window's end: the next window starts at the next request, not at T0 + 2500.
    clock.now = T0 + 4321
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 1, resetAfter: 1000 })
  })

  it('starts each key at its own first request', async () => {
    const { clock, store } = clockedStore(T0)
    const limiter = createLimiter({
      limits: { limit: 1, window: 1000, algorithm: 'fixed-window', start: 'first-request' },
      store,
    })
    await limiter.consume('a')
    clock.now = T0 + 300
    await limiter.consume('b')
    clock.now = T0 + 1000
    expect((await limiter.consume('a')).allowed).toBe(true)
    expect(await limiter.consume('b')).toMatchObject({ allowed: false, retryAfter: 300 })
  })

  it('keeps its state apart from a clock-aligned window of the same numbers', () => {
    const clockAligned = parsePolicy({ limit: 5, window: 1000, algorithm: 'fixed-window' })
    const fromFirst = parsePolicy({ limit: 5, window: 1000, algorithm: 'fixed-window', start: 'first-request' })
    expect(clockAligned.start).toBe('clock')
    expect(fromFirst.start).toBe('first-request')
    expect(fromFirst.id).not.toBe(clockAligned.id)
    const named = (start: 'clock' | 'first-request') =>
      parsePolicy({ limit: 5, window: 1000, algorithm: 'fixed-window', start, name: 'api' }).id
    expect(named('first-request')).not.toBe(named('clock'))
  })

  it('refunds only a request admitted in the same window', async () => {
    const { clock, store } = clockedStore(T0)
    const limiter = createLimiter({
      limits: { limit: 2, window: 1000, algorithm: 'fixed-window', start: 'first-request' },
      store,
    })
    await limiter.consume('k')
    const admittedAt = clock.now
    clock.now = T0 + 1200
    await limiter.consume('k') // a new window from T0 + 1200
    // Admitted in the window before: nothing comes back.
    expect((await limiter.settle('k', { reserved: 1, actual: 0, admittedAt })).remaining).toBe(1)
    clock.now = T0 + 1300
    await limiter.consume('k')
    expect((await limiter.settle('k', { reserved: 1, actual: 0, admittedAt: T0 + 1300 })).remaining).toBe(1)
  })

  it.each([
    [
      { limit: 5, window: 1000, start: 'first-request' },
      'limit.start',
      'first-request',
      /fixed-window only, not sliding-window/,
    ],
    [
      { limit: 5, window: 1000, algorithm: 'token-bucket', start: 'clock' },
      'limit.start',
      'clock',
      /fixed-window only, not token-bucket/,
    ],
    [
      { limit: 5, window: 1000, algorithm: 'fixed-window', start: 'first' },
      'limit.start',
      'first',
      /must be one of 'clock', 'first-request'/,
    ],
    [
      { limit: 5, period: 'day', start: 'first-request' },
      'limit.start',
      'first-request',
      /cannot go with period 'day'/,
    ],
  ])('rejects %j with a ConfigError naming the field and the value', (options, field, value, message) => {
    const error = configErrorOf(() => parsePolicy(options))
    expect(error).toMatchObject({ field, value })
    expect(error.message).toMatch(message)
  })

  it('is refused at createLimiter by a store that does not serve it, naming the policy', () => {
    const store = new SketchStore()
    const error = configErrorOf(() =>
      createLimiter({
        limits: [{ limit: 10, window: 1000, algorithm: 'fixed-window', start: 'first-request', name: 'burst' }],
        store,
      }),
    )
    expect(error).toMatchObject({ field: 'limits[0].start', value: 'first-request' })
    expect(error.message).toMatch(/firstRequestWindows: true.*policy "burst"/)
  })
})
