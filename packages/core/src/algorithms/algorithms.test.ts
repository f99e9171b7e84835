import { describe, expect, it } from 'vitest'
import { type PolicyOptions, parsePolicy } from '../policies/policy.js'
import { type AlgorithmState, peekOutcome, step } from './index.js'
import type { Outcome } from './outcome.js'

/** Runs requests at the given times (ms) and keeps state only for admitted ones, as stores do. */
function run(options: PolicyOptions, requests: { at: number; cost?: number }[]): Outcome[] {
  const policy = parsePolicy(options)
  let state: AlgorithmState | undefined
  return requests.map(({ at, cost = 1 }) => {
    const result = step(state, at, policy, cost)
    if (result.outcome.allowed) state = result.state
    return result.outcome
  })
}

const at = (...times: number[]) => times.map((t) => ({ at: t }))
const brief = (o: Outcome) => [o.allowed ? 'Y' : 'n', o.remaining, o.resetAfter, o.retryAfter]

describe('fixed-window', () => {
  const policy: PolicyOptions = { limit: 3, window: 1000, algorithm: 'fixed-window' }

  it('admits limit per aligned window and reports the window end', () => {
    expect(run(policy, at(10_200, 10_300, 10_400, 10_500, 10_999, 11_000)).map(brief)).toEqual([
      ['Y', 2, 800, 0],
      ['Y', 1, 700, 0],
      ['Y', 0, 600, 0],
      ['n', 0, 500, 500],
      ['n', 0, 1, 1],
      ['Y', 2, 1000, 0],
    ])
  })

  it('lets 2 × limit through across a boundary (documented)', () => {
    const outcomes = run(policy, at(10_997, 10_998, 10_999, 11_000, 11_001, 11_002))
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(6)
  })

  it('counts cost and denies what does not fit, keeping what remains', () => {
    expect(
      run(policy, [
        { at: 0, cost: 2 },
        { at: 1, cost: 2 },
        { at: 2, cost: 1 },
      ]).map(brief),
    ).toEqual([
      ['Y', 1, 1000, 0],
      ['n', 1, 999, 999],
      ['Y', 0, 998, 0],
    ])
  })
})

describe('sliding-window', () => {
  // The classic two-counter form (precision 1): the arithmetic below is its.
  const policy: PolicyOptions = { limit: 10, window: 1000, precision: 1 }

  it('weights the previous window by the part still inside', () => {
    // 10 in window [0, 1000); at 1250, 75 % of them still count: 7.5 → room for 2.
    const requests = [...at(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ...at(1250, 1250, 1250)]
    const outcomes = run(policy, requests)
    expect(outcomes.slice(0, 10).every((o) => o.allowed)).toBe(true)
    expect(outcomes.slice(10).map(brief)).toEqual([
      ['Y', 1, 1750, 0],
      ['Y', 0, 1750, 0],
      // 7.5 + 2 + 1 = 10.5: waits until half a request has slid out: 0.5 × 1000 / 10 = 50 ms.
      ['n', 0, 1750, 50],
    ])
  })

  it('admits again exactly when the retryAfter said', () => {
    const requests = [...at(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ...at(1250, 1250, 1250, 1299, 1300)]
    expect(
      run(policy, requests)
        .slice(12)
        .map((o) => o.allowed),
    ).toEqual([false, false, true])
  })

  it('forgets everything after two windows', () => {
    const outcomes = run(policy, [...at(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ...at(1000, 2000)])
    expect(brief(outcomes[10] as Outcome)).toEqual(['n', 0, 1000, 100])
    expect(brief(outcomes[11] as Outcome)).toEqual(['Y', 9, 2000, 0])
  })

  it('survives a clock that steps back', () => {
    const outcomes = run({ limit: 3, window: 1000, precision: 2 }, at(5000, 5001, 4000, 4000))
    expect(outcomes.map(brief)).toEqual([
      ['Y', 2, 1500, 0],
      ['Y', 1, 1499, 0],
      // Stepped back a second: counted as if no time had passed, never as NaN.
      ['Y', 0, 1500, 0],
      ['n', 0, 1500, 1167],
    ])
  })

  it('uses finer sub-windows with precision', () => {
    // Four 250 ms sub-windows: 10 at t=0 slide out between 1000 and 1250.
    const fine: PolicyOptions = { limit: 10, window: 1000, precision: 4 }
    const requests = [...at(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ...at(1000, 1100, 1250)]
    expect(run(fine, requests).slice(10).map(brief)).toEqual([
      ['n', 0, 250, 25],
      ['Y', 3, 1150, 0],
      ['Y', 8, 1250, 0],
    ])
    // The classic form still counts 9 of them at 1100 and 7.5 at 1250.
    expect(run(policy, requests).slice(10).map(brief)).toEqual([
      ['n', 0, 1000, 100],
      ['Y', 0, 1900, 0],
      ['Y', 0, 1750, 0],
    ])
  })
})

describe('sliding-log', () => {
  const policy: PolicyOptions = { limit: 3, window: 1000, algorithm: 'sliding-log' }

  it('admits exactly limit in any window and waits for the oldest to leave', () => {
    expect(run(policy, at(0, 100, 200, 300, 999, 1000, 1001, 1100, 1200)).map(brief)).toEqual([
      ['Y', 2, 1000, 0],
      ['Y', 1, 1000, 0],
      ['Y', 0, 1000, 0],
      ['n', 0, 900, 700],
      ['n', 0, 201, 1],
      ['Y', 0, 1000, 0],
      ['n', 0, 999, 99],
      ['Y', 0, 1000, 0],
      ['Y', 0, 1000, 0],
    ])
  })

  it('waits for enough entries to leave for a larger cost', () => {
    const outcomes = run(policy, [{ at: 0 }, { at: 100 }, { at: 200 }, { at: 500, cost: 2 }])
    expect(brief(outcomes[3] as Outcome)).toEqual(['n', 0, 700, 600])
  })
})

describe('sliding-log: a clock that steps back', () => {
  const policy: PolicyOptions = { limit: 3, window: 1000, algorithm: 'sliding-log' }

  it('counts entries up to a window ahead, and the next admission restamps them at now', () => {
    expect(run(policy, at(5000, 5000, 4500, 4600)).map(brief)).toEqual([
      ['Y', 2, 1000, 0],
      ['Y', 1, 1000, 0],
      ['Y', 0, 1000, 0],
      // The entries of 5000 were restamped 4500: they leave at 5500, not 6000.
      ['n', 0, 900, 900],
    ])
  })

  it('reads a log more than a window ahead as no log', () => {
    const glitch = 3_600_000 + 5000
    const outcomes = run(policy, at(glitch, glitch, glitch, glitch, 5000, 5001))
    expect(outcomes.map(brief)).toEqual([
      ['Y', 2, 1000, 0],
      ['Y', 1, 1000, 0],
      ['Y', 0, 1000, 0],
      ['n', 0, 1000, 1000],
      ['Y', 2, 1000, 0],
      ['Y', 1, 1000, 0],
    ])
  })
})

describe('token-bucket', () => {
  const policy: PolicyOptions = { limit: 10, window: 1000, algorithm: 'token-bucket', burst: 5 }

  it('starts full at burst and refills at limit per window', () => {
    expect(run(policy, at(0, 0, 0, 0, 0, 0, 50, 99, 100, 100)).map(brief)).toEqual([
      ['Y', 4, 100, 0],
      ['Y', 3, 200, 0],
      ['Y', 2, 300, 0],
      ['Y', 1, 400, 0],
      ['Y', 0, 500, 0],
      ['n', 0, 500, 100],
      ['n', 0, 450, 50],
      ['n', 0, 401, 1],
      ['Y', 0, 500, 0],
      ['n', 0, 500, 100],
    ])
  })

  it('reserves ahead with maxDelay and says how long to wait', () => {
    const shaped: PolicyOptions = { ...policy, maxDelay: 250 }
    const outcomes = run(shaped, at(0, 0, 0, 0, 0, 0, 0, 0, 0))
    expect(outcomes.map((o) => o.delay)).toEqual([0, 0, 0, 0, 0, 100, 200, 0, 0])
    expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, true, true, true, true, false, false])
    expect(outcomes[7]?.retryAfter).toBe(50)
  })
})

describe('gcra', () => {
  const policy: PolicyOptions = { limit: 10, window: 1000, algorithm: 'gcra', burst: 3 }

  it('admits burst at once, then one per emission interval', () => {
    expect(run(policy, at(0, 0, 0, 0, 50, 100, 100, 250)).map(brief)).toEqual([
      ['Y', 2, 100, 0],
      ['Y', 1, 200, 0],
      ['Y', 0, 300, 0],
      ['n', 0, 300, 100],
      ['n', 0, 250, 50],
      ['Y', 0, 300, 0],
      ['n', 0, 300, 100],
      ['Y', 0, 250, 0],
    ])
  })

  it('handles fractional intervals without losing a request', () => {
    // T = 1000/3 ms: three at once must all fit, a fourth must wait exactly one interval.
    const outcomes = run({ limit: 3, window: 1000, algorithm: 'gcra' }, at(0, 0, 0, 0))
    expect(outcomes.map(brief)).toEqual([
      ['Y', 2, 334, 0],
      ['Y', 1, 667, 0],
      ['Y', 0, 1000, 0],
      ['n', 0, 1000, 334],
    ])
  })

  it('shapes like nginx limit_req without nodelay', () => {
    const outcomes = run({ ...policy, maxDelay: 300 }, at(0, 0, 0, 0, 0, 0, 0))
    expect(outcomes.map((o) => [o.allowed, o.delay])).toEqual([
      [true, 0],
      [true, 0],
      [true, 0],
      [true, 100],
      [true, 200],
      [true, 300],
      [false, 0],
    ])
    expect(outcomes[6]?.retryAfter).toBe(100)
  })
})

describe('peek', () => {
  it.each(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const)(
    '%s reports what is left and when one more would pass, consuming nothing',
    (algorithm) => {
      const policy = parsePolicy({ limit: 2, window: 1000, algorithm })
      expect(peekOutcome(undefined, 0, policy)).toEqual({
        allowed: true,
        remaining: 2,
        resetAfter: 0,
        retryAfter: 0,
        delay: 0,
      })
      let state = step(undefined, 0, policy, 1).state
      expect(peekOutcome(state, 0, policy)).toMatchObject({ allowed: true, remaining: 1, retryAfter: 0 })
      state = step(state, 0, policy, 1).state
      const full = peekOutcome(state, 0, policy)
      expect(full.allowed).toBe(false)
      expect(full.remaining).toBe(0)
      expect(full.retryAfter).toBeGreaterThan(0)
      expect(full.resetAfter).toBeGreaterThan(0)
    },
  )
})
