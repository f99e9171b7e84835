import { ALGORITHMS, maxAdmittedInWindow, parsePolicy } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { measure } from '../../bench/accuracy/simulate.js'
import { buildTrace, spread, standardTraces } from '../../bench/accuracy/traces.js'

// The short form of `pnpm bench:accuracy`: the same traces, fewer clients and minutes.
const LIMIT = 20
const WINDOW = 10_000
const traces = standardTraces(LIMIT, WINDOW, 5 * 60_000, 0.1, 17)

describe('accuracy bench, short form', () => {
  it('the traces are seeded: the same seed gives the same requests', () => {
    const again = standardTraces(LIMIT, WINDOW, 5 * 60_000, 0.1, 17)
    expect(again.map((t) => t.clients.map((c) => c.times))).toEqual(traces.map((t) => t.clients.map((c) => c.times)))
    expect(traces.every((t) => t.clients.every((c) => c.times.length > 0))).toBe(true)
  })

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: no trace gets past the documented bound`, async () => {
      const policy = { limit: LIMIT, window: WINDOW, algorithm }
      const bound = maxAdmittedInWindow(parsePolicy(policy))
      for (const trace of traces) {
        const result = await measure(trace, policy)
        expect(result.maxInWindow).toBeLessThanOrEqual(bound)
        expect(result.admitted).toBeGreaterThan(0)
        if (algorithm === 'sliding-log') {
          // The log is the reference: it agrees with itself on every decision.
          expect(result.allowedPast + result.deniedUnder).toBe(0)
          expect(result.maxInWindow).toBeLessThanOrEqual(LIMIT)
        }
      }
    })
  }

  it('a flood from t = 0 meets a full bucket: token bucket and GCRA come within a unit of their bound', async () => {
    const flood = buildTrace('flood', [{ shape: 'steady', rate: 50 }], LIMIT, WINDOW, 3 * WINDOW, 1)
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const policy = { limit: LIMIT, window: WINDOW, algorithm }
      const bound = maxAdmittedInWindow(parsePolicy(policy))
      const result = await measure(flood, policy)
      expect(result.maxInWindow).toBeGreaterThanOrEqual(bound - 1)
      expect(result.maxInWindow).toBeLessThanOrEqual(bound)
      // Over three windows it is held to the burst plus the refill.
      expect(result.admitted).toBeLessThanOrEqual(LIMIT + 3 * LIMIT)
    }
  })

  it('more sub-windows bring the sliding window closer to the exact log on Poisson traffic', async () => {
    const poisson = buildTrace(
      'p',
      spread(40, 0.5, 1.5).map((rate) => ({ shape: 'poisson' as const, rate })),
      LIMIT,
      WINDOW,
      20 * WINDOW,
      5,
    )
    const differing = async (precision: number) => {
      const r = await measure(poisson, { limit: LIMIT, window: WINDOW, precision })
      return (r.allowedPast + r.deniedUnder) / r.decisions
    }
    expect(await differing(10)).toBeLessThan(await differing(1))
  })
})
