import { describe, expect, it } from 'vitest'
import { denied as no, admitted as ok } from '../algorithms/outcome.js'
import { ConfigError } from '../diagnostics/errors.js'
import { toDecision } from '../limiter/decision.js'
import { parsePolicies } from '../policies/policy.js'
import {
  concurrencyHeaders,
  headerModeOption,
  rateLimitHeaders,
  rateLimitHeaderWriter,
  retryAfterHeader,
  retryAfterSeconds,
  sfString,
} from './headers.js'

const { policies } = parsePolicies(['100/min', '2/s'])

const admitted = toDecision('k', policies, [ok(57, 33_001), ok(1, 400)], 'store')
const denied = toDecision('k', policies, [ok(57, 33_001), no(0, 2_000, 1_200)], 'store')

const asRecord = (entries: ReturnType<typeof rateLimitHeaders>) => entries.map((e) => `${e.name}: ${e.value}`)

describe('draft-11 headers', () => {
  it('lists every policy, in order, with seconds rounded up', () => {
    expect(asRecord(rateLimitHeaders(admitted, 'draft-11'))).toEqual([
      'RateLimit-Policy: "100-per-1m";q=100;w=60, "2-per-1s";q=2;w=1',
      'RateLimit: "100-per-1m";r=57;t=34, "2-per-1s";r=1;t=1',
    ])
  })

  it('are appended, so that stacked limiters add list members', () => {
    expect(rateLimitHeaders(admitted, 'draft-11').every((e) => e.append)).toBe(true)
  })

  it('give a denying policy its retry time as t, so Retry-After is not before the window ends', () => {
    const [, state] = rateLimitHeaders(denied, 'draft-11')
    expect(state?.value).toBe('"100-per-1m";r=57;t=34, "2-per-1s";r=0;t=2')
    expect(retryAfterHeader(denied.retryAfter)).toEqual({ name: 'Retry-After', value: '2', append: false })
  })

  it('rounds sub-second windows up to 1 (w must be non-zero)', () => {
    const set = parsePolicies([{ limit: 5, window: 250 }])
    const d = toDecision('k', set.policies, [ok(4, 250)], 'store')
    expect(rateLimitHeaders(d, 'draft-11')[0]?.value).toBe('"5-per-250ms";q=5;w=1')
  })
})

describe("a limiter's header writer", () => {
  it('writes what rateLimitHeaders does, in every mode', () => {
    for (const mode of ['draft-11', 'draft-7', 'draft-6', 'legacy', false] as const) {
      const write = rateLimitHeaderWriter(policies, mode)
      for (const decision of [admitted, denied]) {
        expect(write(decision, 1_800_000_000_500)).toEqual(rateLimitHeaders(decision, mode, 1_800_000_000_500))
      }
    }
  })

  it('serialises the draft-11 RateLimit-Policy once, and a fresh list for each response', () => {
    const write = rateLimitHeaderWriter(policies, 'draft-11')
    const first = write(admitted)
    const second = write(denied)
    expect(second[0]).toBe(first[0])
    expect(second[1]?.value).toBe('"100-per-1m";r=57;t=34, "2-per-1s";r=0;t=2')
    expect(second).not.toBe(first)
  })
})

describe('express-rate-limit compatible modes', () => {
  it('draft-7 describes the binding policy only', () => {
    expect(asRecord(rateLimitHeaders(admitted, 'draft-7'))).toEqual([
      'RateLimit-Policy: 2;w=1',
      'RateLimit: limit=2, remaining=1, reset=1',
    ])
  })

  it('draft-6 sends the four separate fields', () => {
    expect(asRecord(rateLimitHeaders(denied, 'draft-6'))).toEqual([
      'RateLimit-Policy: 2;w=1',
      'RateLimit-Limit: 2',
      'RateLimit-Remaining: 0',
      'RateLimit-Reset: 2',
    ])
  })

  it('legacy sends X-RateLimit-* with Reset as epoch seconds', () => {
    expect(asRecord(rateLimitHeaders(admitted, 'legacy', 1_800_000_000_500))).toEqual([
      'X-RateLimit-Limit: 2',
      'X-RateLimit-Remaining: 1',
      'X-RateLimit-Reset: 1800000001',
    ])
  })

  it('false sends nothing', () => {
    expect(rateLimitHeaders(denied, false)).toEqual([])
  })
})

describe('retryAfterSeconds', () => {
  it('rounds up and is at least 1', () => {
    expect([0, 1, 999, 1000, 1001, 59_999].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2, 60])
  })
})

describe('headerModeOption', () => {
  it('defaults to draft-11 and accepts the modes and booleans', () => {
    expect(headerModeOption(undefined)).toBe('draft-11')
    expect(headerModeOption(true)).toBe('draft-11')
    expect(headerModeOption(false)).toBe(false)
    expect(headerModeOption('draft-6')).toBe('draft-6')
    expect(headerModeOption('legacy')).toBe('legacy')
  })

  it('rejects anything else with a ConfigError naming the field and value', () => {
    const error = (() => {
      try {
        headerModeOption('draft-8')
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect(error).toMatchObject({ field: 'headers', value: 'draft-8' })
    expect((error as Error).message).toMatch(/same syntax as draft-11/)
    expect(() => headerModeOption('ietf')).toThrow(/headers must be one of 'draft-11'.*got "ietf"/)
  })
})

describe('sfString and concurrency headers', () => {
  it('escapes quotes and backslashes and rejects non-ASCII', () => {
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"')
    expect(() => sfString('café')).toThrow(ConfigError)
  })

  it('concurrency uses the concurrent-requests quota unit, in draft-11 only', () => {
    expect(asRecord(concurrencyHeaders('slots', 10, 3, 'draft-11'))).toEqual([
      'RateLimit-Policy: "slots";q=10;qu="concurrent-requests"',
      'RateLimit: "slots";r=3',
    ])
    expect(concurrencyHeaders('slots', 10, 3, 'legacy')).toEqual([])
  })
})
