import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import { MemoryStore } from '../stores/memory-store.js'
import { capacityOf, formatDuration, parsePolicies, parsePolicy } from './policy.js'

describe('shorthand policies', () => {
  it.each([
    ['100/min', 100, 60_000, '100-per-1m'],
    ['2/s', 2, 1_000, '2-per-1s'],
    ['10/5m', 10, 300_000, '10-per-5m'],
    ['5000/1h', 5000, 3_600_000, '5000-per-1h'],
    ['1000/day', 1000, 86_400_000, '1000-per-1d'],
    ['7/250ms', 7, 250, '7-per-250ms'],
    ['3 / 90sec', 3, 90_000, '3-per-90s'],
    ['1/1.5s', 1, 1_500, '1-per-1500ms'],
  ])('%s → limit %i per %i ms, named %s', (text, limit, window, name) => {
    expect(parsePolicy(text)).toMatchObject({ limit, window, name, algorithm: 'sliding-window', precision: 10 })
  })

  it('defaults precision to 10 sub-windows, or the most up to 10 that split the window into whole ms', () => {
    const precision = (window: number) => parsePolicy({ limit: 5, window }).precision
    expect([60_000, 1000, 250, 20, 7, 1001, 13, 1].map(precision)).toEqual([10, 10, 10, 10, 7, 7, 1, 1])
    expect(parsePolicy({ limit: 5, window: 60_000, precision: 1 }).precision).toBe(1)
  })

  it('fills the defaults of the object form', () => {
    const policy = parsePolicy({ limit: 10, window: '1m', algorithm: 'gcra' })
    expect(policy).toMatchObject({ burst: 10, maxDelay: 0, precision: 1, name: '10-per-1m' })
    expect(parsePolicy({ limit: 10, window: 60_000, algorithm: 'token-bucket', burst: 3, name: 'api' })).toMatchObject({
      burst: 3,
      name: 'api',
    })
  })

  it('gives policies with different parameters different ids, and equal ones equal ids', () => {
    expect(parsePolicy('10/s').id).toBe(parsePolicy({ limit: 10, window: 1000 }).id)
    expect(parsePolicy('10/s').id).not.toBe(parsePolicy({ limit: 10, window: 1000, algorithm: 'gcra' }).id)
  })

  it('accepts one policy or a list', () => {
    expect(parsePolicies('5/s').policies).toHaveLength(1)
    expect(parsePolicies({ limit: 5, window: 1000 }).policies).toHaveLength(1)
    expect(parsePolicies(['100/min', '2/s']).policies.map((p) => p.name)).toEqual(['100-per-1m', '2-per-1s'])
  })

  it('makes a set that cannot be changed: the set and each policy frozen, the array read-only by type', () => {
    const set = parsePolicies(['100/min', '2/s'])
    expect(Object.isFrozen(set)).toBe(true)
    expect(set.policies.every((policy) => Object.isFrozen(policy))).toBe(true)
    expect(() => {
      ;(set as { id: string }).id = 'other'
    }).toThrow(TypeError)
    expect(() => {
      ;(set.policies[0] as { limit: number }).limit = 1
    }).toThrow(TypeError)
  })

  it('formats durations with the largest unit that divides them', () => {
    expect([60_000, 90_000, 1_500, 7_200_000, 172_800_000].map(formatDuration)).toEqual([
      '1m',
      '90s',
      '1500ms',
      '2h',
      '2d',
    ])
  })

  it('knows the largest cost a policy can admit', () => {
    expect(capacityOf(parsePolicy('10/s'))).toBe(10)
    expect(capacityOf(parsePolicy({ limit: 10, window: 1000, algorithm: 'gcra', burst: 4 }))).toBe(4)
    expect(capacityOf(parsePolicy({ limit: 10, window: 1000, algorithm: 'gcra', burst: 4, maxDelay: 500 }))).toBe(9)
  })
})

describe('misconfiguration is a ConfigError naming the field and the value', () => {
  const cases: [string, unknown, string, RegExp][] = [
    ['limit 0', { limit: 0, window: 1000 }, 'limits[0].limit', /got 0/],
    ['negative limit', { limit: -5, window: 1000 }, 'limits[0].limit', /got -5/],
    ['fractional limit', { limit: 2.5, window: 1000 }, 'limits[0].limit', /got 2.5/],
    ['NaN limit', { limit: Number.NaN, window: 1000 }, 'limits[0].limit', /got NaN/],
    ['string limit', { limit: '10', window: 1000 }, 'limits[0].limit', /got "10"/],
    ['shorthand limit 0', '0/min', 'limits[0].limit', /got 0/],
    ['window 0', { limit: 1, window: 0 }, 'limits[0].window', /greater than 0, got 0/],
    ['negative window', { limit: 1, window: -1000 }, 'limits[0].window', /got -1000/],
    ['fractional window', { limit: 1, window: 0.5 }, 'limits[0].window', /whole number of milliseconds, got 0.5/],
    ['Infinity window', { limit: 1, window: Number.POSITIVE_INFINITY }, 'limits[0].window', /got Infinity/],
    ['unknown unit', '100/fortnight', 'limits[0]', /units: ms\/msec.*got "100\/fortnight"/],
    ['unknown unit in object window', { limit: 1, window: '5 weeks' }, 'limits[0].window', /"5 weeks"/],
    ['garbage shorthand', 'lots', 'limits[0]', /"lots"/],
    ['hex shorthand', '0x10/s', 'limits[0]', /"0x10\/s"/],
    ['missing window', '100/', 'limits[0]', /"100\/"/],
    [
      'unknown algorithm',
      { limit: 1, window: 1000, algorithm: 'leaky' },
      'limits[0].algorithm',
      /one of fixed-window.*"leaky"/,
    ],
    ['burst 0', { limit: 1, window: 1000, algorithm: 'gcra', burst: 0 }, 'limits[0].burst', /got 0/],
    [
      'burst on fixed-window',
      { limit: 1, window: 1000, algorithm: 'fixed-window', burst: 3 },
      'limits[0].burst',
      /gcra and token-bucket only/,
    ],
    [
      'precision on gcra',
      { limit: 1, window: 1000, algorithm: 'gcra', precision: 2 },
      'limits[0].precision',
      /sliding-window only/,
    ],
    [
      'precision not dividing the window',
      { limit: 1, window: 1000, precision: 7 },
      'limits[0].precision',
      /divide the window/,
    ],
    ['precision too high', { limit: 1, window: 60_000, precision: 600 }, 'limits[0].precision', /at most 60/],
    [
      'maxDelay on sliding-log',
      { limit: 1, window: 1000, algorithm: 'sliding-log', maxDelay: 10 },
      'limits[0].maxDelay',
      /gcra and token-bucket/,
    ],
    [
      'negative maxDelay',
      { limit: 1, window: 1000, algorithm: 'gcra', maxDelay: -1 },
      'limits[0].maxDelay',
      /negative/,
    ],
    [
      'huge sliding log',
      { limit: 1_000_000, window: 1000, algorithm: 'sliding-log' },
      'limits[0].limit',
      /at most 10000 for sliding-log/,
    ],
    [
      'token bucket too large to count exactly',
      { limit: 1_000_000_000, window: '1d', algorithm: 'token-bucket' },
      'limits[0].burst',
      /below 2\^53 for token-bucket/,
    ],
    ['unknown option', { limit: 1, window: 1000, windowMs: 5 }, 'limits[0].windowMs', /not a policy option/],
    ['bad name', { limit: 1, window: 1000, name: 'has "quotes"' }, 'limits[0].name', /letters, digits/],
    ['empty list', [], 'limits', /non-empty array/],
    ['null policy', [null], 'limits[0]', /shorthand such as "100\/min"/],
    ['number policy', 5, 'limits', /got 5/],
    ['duplicate names', ['10/s', { limit: 10, window: '1s', algorithm: 'gcra' }], 'limits[1].name', /unique/],
  ]

  it.each(cases)('%s', (_, limits, field, message) => {
    const attempt = () => createLimiter({ limits: limits as never })
    expect(attempt).toThrow(ConfigError)
    expect(attempt).toThrow(TypeError)
    try {
      attempt()
    } catch (error) {
      expect((error as ConfigError).field).toBe(field)
      expect((error as ConfigError).message.startsWith(`${field} `)).toBe(true)
      expect((error as ConfigError).message).toMatch(message)
    }
  })

  it('rejects bad limiter options', () => {
    expect(() => createLimiter({ limits: '1/s', timeout: 0 })).toThrow(/timeout must be greater than 0, got 0/)
    expect(() => createLimiter({ limits: '1/s', onStoreError: 'ignore' as never })).toThrow(
      /onStoreError must be 'allow', 'deny' or a fallback store, got "ignore"/,
    )
    expect(() => createLimiter({ limits: '1/s', store: {} as never })).toThrow(/store must be a store/)
    expect(() => createLimiter({ limits: '1/s', maxDelay: '1s' })).toThrow(
      /maxDelay needs a gcra or token-bucket policy/,
    )
    expect(() => createLimiter(undefined as never)).toThrow(/options must be an object/)
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(/maxKeys must be a positive whole number, got 0/)
  })

  it.each([
    [0, /cost must be a whole number from 1 to 10/],
    [-1, /got -1/],
    [1.5, /got 1.5/],
    [11, /got 11/],
    [Number.NaN, /got NaN/],
    [null, /got null/],
    ['2', /got "2"/],
  ])('rejects cost %s at the call', async (cost, message) => {
    const limiter = createLimiter({ limits: ['10/s', '100/min'] })
    await expect(limiter.consume('k', { cost: cost as number })).rejects.toThrow(ConfigError)
    await expect(limiter.consume('k', { cost: cost as number })).rejects.toThrow(message)
  })

  it('rejects a key that is not a string', async () => {
    const limiter = createLimiter({ limits: '10/s' })
    await expect(limiter.consume(42 as never)).rejects.toThrow(/key must be a string, got 42/)
    await expect(limiter.peek(undefined as never)).rejects.toThrow(/key must be a string, got undefined/)
  })
})
