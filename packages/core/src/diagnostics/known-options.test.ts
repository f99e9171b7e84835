import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { Adapter } from '../http/common-options.js'
import { createRateLimitHandler } from '../http/rate-limit.js'
import { createLimiter, type LimiterOptions } from '../limiter/limiter.js'
import { DURATION_UNIT_MS, DURATION_UNITS, DURATION_UNITS_TEXT, toMilliseconds } from '../policies/duration.js'
import { parsePolicy } from '../policies/policy.js'
import { MemoryStore, type MemoryStoreOptions } from '../stores/memory-store.js'
import { ConfigError } from './errors.js'

function configError(fn: () => unknown): ConfigError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('expected a ConfigError')
}

type Args = [request: { ip?: string }]
const adapter: Adapter<Args> = { name: '@sluice/test', addressSource: 'ip', address: (r) => r.ip, status: () => 200 }

/** Issue 13, defects 6 and 7. */
describe('unknown options are rejected everywhere, with the same hints as rateLimit()', () => {
  it('createLimiter', () => {
    const error = configError(() => createLimiter({ limits: '10/min', windowMs: 60_000 } as LimiterOptions))
    expect(error).toMatchObject({ field: 'windowMs', value: 60_000 })
    expect(error.message).toMatch(/^windowMs is not an option of createLimiter\(\): set the window in limits/)
    expect(error.message).toMatch(/known options: limits, store, onStoreError, timeout, maxDelay/)
    expect(configError(() => createLimiter({ limits: '1/s', lmits: 2 } as never)).field).toBe('lmits')
    expect(configError(() => createLimiter({ limits: '1/s', points: 5 } as never)).message).toMatch(
      /limits: \['100\/1h'\]/,
    )
    // undefined reads as absent, as in rateLimit()
    expect(() => createLimiter({ limits: '1/s', windowMs: undefined } as never)).not.toThrow()
  })

  it('MemoryStore: a misspelt option names the right one', () => {
    const error = configError(() => new MemoryStore({ maxkeys: 10 } as MemoryStoreOptions))
    expect(error.field).toBe('maxkeys')
    expect(error.message).toMatch(/^maxkeys is not an option of MemoryStore: did you mean maxKeys\?/)
    expect(configError(() => new MemoryStore({ ttl: 10 } as never)).message).toMatch(/nothing to set/)
    expect(configError(() => new MemoryStore(null as never)).field).toBe('options')
  })

  it('legacyHeaders and standardHeaders hints follow the value given', () => {
    const build = (options: object) => () => createRateLimitHandler(options as never, adapter)
    expect(configError(build({ limits: '1/s', legacyHeaders: false })).message).toMatch(
      /legacyHeaders is not an option of rateLimit\(\): X-RateLimit-\* headers are sent only with headers: 'legacy', so remove legacyHeaders/,
    )
    expect(configError(build({ limits: '1/s', legacyHeaders: true })).message).toMatch(/use headers: 'legacy'/)
    expect(configError(build({ limits: '1/s', standardHeaders: false })).message).toMatch(/: use headers: false \(/)
  })
})

describe('plural and long unit names', () => {
  it.each([
    ['100/minute', 100, 60_000],
    ['100/minutes', 100, 60_000],
    ['100/second', 100, 1000],
    ['100/seconds', 100, 1000],
    ['100/hours', 100, 3_600_000],
    ['100/hour', 100, 3_600_000],
    ['5/15 minutes', 5, 900_000],
    ['10/days', 10, 86_400_000],
    ['10/2 hrs', 10, 7_200_000],
    ['10/500 milliseconds', 10, 500],
  ])('%s', (text, limit, window) => {
    expect(parsePolicy(text)).toMatchObject({ limit, window })
  })

  it('in every duration option, and still rejects what is not a unit', () => {
    expect(toMilliseconds('timeout', '2 seconds')).toBe(2000)
    expect(configError(() => parsePolicy('100/fortnight')).field).toBe('limit')
    expect(configError(() => parsePolicy('100/constructor')).field).toBe('limit')
  })
})

describe('did you mean', () => {
  it.each([
    ['skipSuccesfulRequests', 'skipSuccessfulRequests'],
    ['onStoreErorr', 'onStoreError'],
    ['namepsace', 'namespace'],
    ['limts', 'limits'],
    ['Timeout', 'timeout'],
  ])('%s: did you mean %s?', (typed, meant) => {
    const build = () => createRateLimitHandler({ limits: '1/s', [typed]: true } as never, adapter)
    const error = configError(build)
    expect(error.field).toBe(typed)
    expect(error.message).toContain(`is not an option of rateLimit(): did you mean ${meant}?`)
  })

  it('names nothing when no option is close', () => {
    const error = configError(() => createLimiter({ limits: '1/s', frobnicate: 1 } as LimiterOptions))
    expect(error.message).not.toMatch(/did you mean/)
    expect(error.message).toMatch(/known options: limits, store/)
  })
})

describe('units: one list for the parser, the errors and the docs', () => {
  it('accepts every listed unit, in lower case only', () => {
    for (const unit of DURATION_UNITS) expect(toMilliseconds('window', `2${unit}`)).toBe(2 * DURATION_UNIT_MS[unit])
    expect(configError(() => toMilliseconds('window', '2S')).message).toMatch(/did you mean "2s"\?/)
  })

  it("refuses 'M', which could be a month, with a hint for minutes", () => {
    const error = configError(() => parsePolicy('100/M', 'limits[0]'))
    expect(error.field).toBe('limits[0]')
    expect(error.message).toMatch(/"M" is not a unit: minutes are "m" or "min"/)
  })

  it('suggests the closest unit, and lists all of them', () => {
    expect(configError(() => parsePolicy('100/mni')).message).toMatch(/did you mean "min"\?/)
    expect(configError(() => toMilliseconds('timeout', '5 secnds')).message).toMatch(/did you mean "5seconds"\?/)
    expect(configError(() => parsePolicy('100/fortnight')).message).toContain(`(units: ${DURATION_UNITS_TEXT})`)
  })

  it('the core README lists exactly these units', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    expect(readme).toContain(
      `units ${DURATION_UNITS_TEXT.split(', ')
        .map((u) => `\`${u}\``)
        .join(', ')}`,
    )
  })
})

/** Issue 40, item 4: hints that pointed at the wrong thing, or at nothing. */
describe('hints that name the real problem', () => {
  it('a limit that is not whole, or not in digits: the number is the problem, not the unit', () => {
    const fraction = configError(() => parsePolicy('1.5/s')).message
    expect(fraction).toMatch(/a limit counts whole requests: "3\/2s" is the same rate/)
    expect(fraction).not.toMatch(/did you mean/)
    const exponent = configError(() => parsePolicy('1e3/min')).message
    expect(exponent).toMatch(/write the limit in digits: "1000\/min"/)
    expect(exponent).not.toMatch(/did you mean/)
    expect(configError(() => parsePolicy('0.1/min')).message).toMatch(/"1\/10m" is the same rate/)
    expect(configError(() => parsePolicy('-5/min')).message).toMatch(/whole number of requests from 1/)
  })

  it.each([
    ['10000/month', "{ limit: 10000, period: 'month' }"],
    ['100/mo', "{ limit: 100, period: 'month' }"],
    ['1000/week', "{ limit: 1000, period: 'week' }"],
    ['5/year', "{ limit: 5, period: 'year' }"],
    ['5/M', "{ limit: 5, period: 'month' }"],
  ])('%s points to the calendar period %s', (text, period) => {
    expect(configError(() => parsePolicy(text)).message).toContain(period)
  })

  it('a month as a window points to the calendar period too', () => {
    const error = configError(() => parsePolicy({ limit: 100, window: '1month' }))
    expect(error.field).toBe('limit.window')
    expect(error.message).toContain("{ limit: n, period: 'month' }")
  })

  it("a Redis client given to createLimiter: pass it to a store, and the client's fields stay out of the message", () => {
    const client = {
      options: { host: 'localhost', port: 6379, keepAlive: 30_000, sentinels: null },
      status: 'wait',
      commandQueue: Array(50).fill(0),
    }
    const error = configError(() => createLimiter({ limits: '1/s', storeClient: client } as never))
    expect(error.message).toMatch(
      /^storeClient is not an option of createLimiter\(\): pass the client to a store: store: new RedisStore\(\{ client \}\)/,
    )
    expect(error.message).not.toMatch(/: use client/)
    expect(error.message).toMatch(/got \{"options":\{"host":"localhost".{0,120}…$/)
    expect(error.message.length).toBeLessThan(400)
  })

  it.each([
    ['identifier', /use name on a policy object/],
    ['execEvenly', /algorithm: 'gcra' with maxDelay/],
    ['inMemoryBlockOnConsumed', /deniedCache, on by default/],
  ])('%s, which the migration guides map, gets its hint', (option, hint) => {
    expect(configError(() => createLimiter({ limits: '1/s', [option]: 1 } as never)).message).toMatch(hint)
  })

  it.each([
    ['windowMs', /is not a policy option: use window/],
    ['max', /is not a policy option: use limit/],
    ['points', /is not a policy option: use limit/],
    ['duration', /is not a policy option: use window: milliseconds \(not seconds\)/],
    ['windwo', /is not a policy option: did you mean window\?/],
    ['warmUpPeriodSec', /is not a policy option: use warmup: milliseconds \(not seconds\)/],
    ['warmupPeriod', /is not a policy option: use warmup/],
  ])('%s inside limits gets a hint', (option, hint) => {
    const error = configError(() => createLimiter({ limits: [{ limit: 5, window: '1s', [option]: 1 }] as never }))
    expect(error.field).toBe(`limits[0].${option}`)
    expect(error.message).toMatch(hint)
  })

  it("rateLimit()'s known options name each option once", () => {
    const error = configError(() => createRateLimitHandler({ limits: '1/s', frobnicate: 1 } as never, adapter))
    const known = /\(known options: ([^)]*)\)/.exec(error.message)?.[1]?.split(', ') ?? []
    expect(known).toContain('validate')
    expect(known.length).toBe(new Set(known).size)
  })
})
