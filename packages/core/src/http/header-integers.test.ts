import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import { MAX_HEADER_INTEGER, parsePolicy } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createConcurrencyHandler } from './concurrency.js'
import { rateLimitHeaders } from './headers.js'

/** Issue 13, defect 3: every number in the headers stays an RFC 9651 Integer (at most 15 digits). */
describe('limits the RateLimit headers cannot carry are a ConfigError', () => {
  it('rejects a limit or burst of 10^15 or more, naming the field', () => {
    for (const bad of [1e15, 2 ** 53 - 1]) {
      expect(() => parsePolicy({ limit: bad, window: '1m' })).toThrow(ConfigError)
      expect(() => parsePolicy(`${bad}/min`)).toThrow(/^limit.limit must be at most 999999999999999 \(15 digits/)
      expect(() => parsePolicy({ limit: 10, window: '1h', algorithm: 'gcra', burst: bad })).toThrow(
        /burst must be at most/,
      )
    }
    const adapter = { name: 't', addressSource: 'ip', address: () => '1.1.1.1', status: () => 200 }
    expect(() => createConcurrencyHandler({ limit: 1e15 }, adapter)).toThrow(/^limit must be at most/)
  })

  it('the largest limit allowed serialises as a 15-digit Integer', async () => {
    const limiter = createLimiter({ limits: { limit: MAX_HEADER_INTEGER, window: '1d', algorithm: 'fixed-window' } })
    const headers = rateLimitHeaders(await limiter.consume('k'), 'draft-11')
    const policy = headers.find((h) => h.name === 'RateLimit-Policy')?.value ?? ''
    expect(policy).toMatch(/;q=999999999999999;w=86400$/)
    for (const header of headers) {
      for (const [, digits] of header.value.matchAll(/[qrtw]=(\d+)/g)) expect(digits?.length).toBeLessThanOrEqual(15)
    }
  })
})

/** Issue 13, defect 4: with r=0 on an admitted response, `t` is when the next unit comes, as a denial says. */
describe('t on an admitted response with nothing remaining', () => {
  const start = 1_700_000_000_000 - (1_700_000_000_000 % 60_000)
  const tOf = (value: string | undefined) => Number(/;t=(\d+)/.exec(value ?? '')?.[1])
  it.each([
    ['sliding-window', 78],
    ['token-bucket', 18],
    ['gcra', 18],
    ['fixed-window', 48],
    ['sliding-log', 48],
  ] as const)("'2/1m' on %s at 12.3 s: t = %i, the denial's Retry-After", async (algorithm, t) => {
    let now = start
    const store = new MemoryStore({ now: () => now })
    // One sub-window, the form the figures were taken on (the default is ten).
    const precision = algorithm === 'sliding-window' ? { precision: 1 } : {}
    const limiter = createLimiter({ limits: { limit: 2, window: '1m', algorithm, ...precision }, store })
    await limiter.consume('k')
    now = start + 12_300
    const admitted = await limiter.consume('k')
    expect(admitted).toMatchObject({ allowed: true, remaining: 0 })
    const denied = await limiter.consume('k')
    expect(denied.allowed).toBe(false)
    const state = (d: typeof admitted) => rateLimitHeaders(d, 'draft-11').find((h) => h.name === 'RateLimit')?.value
    expect(tOf(state(admitted))).toBe(tOf(state(denied)))
    expect(tOf(state(admitted))).toBe(Math.ceil(denied.retryAfter / 1000))
    expect(tOf(state(admitted))).toBe(t)
  })
})
