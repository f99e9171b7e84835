import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  ALGORITHMS,
  type AlgorithmName,
  capacityOf,
  type Policy,
  parsePolicies,
  parsePolicy,
} from '../policies/policy.js'
import { evaluate } from '../stores/contract.js'
import { type AlgorithmState, peekOutcome, refund, step } from './index.js'
import { type PolicyRanges, policyArb } from './policies.test-util.js'

interface Admission {
  at: number
  cost: number
  delay: number
}

const requestsArb = fc.array(
  fc.record({ gap: fc.integer({ min: 0, max: 400 }), cost: fc.integer({ min: 1, max: 3 }) }),
  {
    minLength: 1,
    maxLength: 120,
  },
)

const RANGES: PolicyRanges = { limit: [3, 20], windows: [100, 250, 1000, 1500], burst: [3, 20], precisions: [1, 2, 5] }
/** With `shaping`, the buckets take a maxDelay too. */
const shapedArb = (algorithm: AlgorithmName, shaping = false) =>
  policyArb(algorithm, shaping ? { ...RANGES, maxDelays: [0, 100, 700] } : RANGES)

/** Feeds a stream of requests through one policy, keeping state only for admitted requests. */
function simulate(policy: Policy, requests: { gap: number; cost: number }[]) {
  let now = 1_000_000
  let state: AlgorithmState | undefined
  const admissions: Admission[] = []
  const outcomes = []
  for (const { gap, cost } of requests) {
    now += gap
    const result = step(state, now, policy, cost)
    outcomes.push({ now, cost, state, outcome: result.outcome })
    if (result.outcome.allowed) {
      state = result.state
      admissions.push({ at: now, cost, delay: result.outcome.delay })
    }
  }
  return { admissions, outcomes }
}

/** The largest total cost whose times fall in any span [t, t + length] (or [t, t + length) when open). */
function maxInSpan(points: { time: number; cost: number }[], length: number, open: boolean): number {
  const sorted = [...points].sort((a, b) => a.time - b.time)
  let best = 0
  let sum = 0
  let first = 0
  for (const point of sorted) {
    sum += point.cost
    const start = sorted[first] as { time: number; cost: number }
    while (
      open
        ? point.time - (sorted[first] as typeof start).time >= length
        : point.time - (sorted[first] as typeof start).time > length
    ) {
      sum -= (sorted[first] as typeof start).cost
      first++
    }
    best = Math.max(best, sum)
  }
  return best
}

const cheap = (requests: { gap: number; cost: number }[], policy: Policy) =>
  requests.map((r) => ({ ...r, cost: Math.min(r.cost, policy.limit, policy.burst) }))

describe('invariants over random request streams', () => {
  it('sliding-log never admits more than limit in any window of length W', () => {
    fc.assert(
      fc.property(shapedArb('sliding-log'), requestsArb, (policy, raw) => {
        const { admissions } = simulate(policy, cheap(raw, policy))
        const points = admissions.map((a) => ({ time: a.at, cost: a.cost }))
        expect(maxInSpan(points, policy.window, true)).toBeLessThanOrEqual(policy.limit)
      }),
      { numRuns: 300 },
    )
  })

  it('fixed-window never admits more than limit per aligned window', () => {
    fc.assert(
      fc.property(shapedArb('fixed-window'), requestsArb, (policy, raw) => {
        const perWindow = new Map<number, number>()
        for (const a of simulate(policy, cheap(raw, policy)).admissions) {
          const start = Math.floor(a.at / policy.window)
          perWindow.set(start, (perWindow.get(start) ?? 0) + a.cost)
        }
        for (const count of perWindow.values()) expect(count).toBeLessThanOrEqual(policy.limit)
      }),
      { numRuns: 300 },
    )
  })

  for (const algorithm of ['gcra', 'token-bucket'] as const) {
    it(`${algorithm} never lets more than burst + rate·t proceed over any interval t`, () => {
      fc.assert(
        fc.property(
          shapedArb(algorithm, true),
          requestsArb,
          fc.constantFrom(0, 50, 333, 1000, 2500),
          (policy, raw, length) => {
            const { admissions } = simulate(policy, cheap(raw, policy))
            // With shaping a request proceeds after its delay: the schedule holds for proceed times.
            // Delays are whole ms rounded up, so a proceed time lands up to 1 ms after its exact
            // slot and two can sit up to 1 ms closer than the schedule: it holds over length + 1.
            const points = admissions.map((a) => ({ time: a.at + a.delay, cost: a.cost }))
            const bound = policy.burst + (policy.limit * (length + 1)) / policy.window
            expect(maxInSpan(points, length, false)).toBeLessThanOrEqual(bound + 1e-9)
          },
        ),
        {
          numRuns: 300,
          // Slots at 333.3 and 666.7 ms proceed at 334 and 667: four units within 333 ms.
          examples: [
            [
              parsePolicy({ limit: 3, window: 1000, algorithm, burst: 3, maxDelay: 700 }),
              [
                { gap: 0, cost: 1 },
                { gap: 0, cost: 3 },
                { gap: 0, cost: 1 },
              ],
              333,
            ],
          ],
        },
      )
    })
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: remaining never negative, times whole ms, a denial's retryAfter is exact`, () => {
      fc.assert(
        fc.property(shapedArb(algorithm), requestsArb, (policy, raw) => {
          for (const { now, cost, state, outcome } of simulate(policy, cheap(raw, policy)).outcomes) {
            expect(outcome.remaining).toBeGreaterThanOrEqual(0)
            for (const ms of [outcome.resetAfter, outcome.retryAfter, outcome.delay]) {
              expect(Number.isInteger(ms) && ms >= 0).toBe(true)
            }
            if (outcome.allowed) continue
            expect(step(state, now + outcome.retryAfter, policy, cost).outcome.allowed).toBe(true)
            expect(step(state, now + outcome.retryAfter - 1, policy, cost).outcome.allowed).toBe(false)
          }
        }),
        { numRuns: 200 },
      )
    })
  }

  it('a denied request changes no policy state, in any composition', () => {
    const setArb = fc
      .array(
        fc.constantFrom(...ALGORITHMS).chain((a) => shapedArb(a)),
        { minLength: 1, maxLength: 3 },
      )
      .map((policies) =>
        parsePolicies(
          policies.map((p, i) => ({
            limit: p.limit,
            window: p.window,
            algorithm: p.algorithm,
            name: `p${i}`,
            ...(p.algorithm === 'gcra' || p.algorithm === 'token-bucket' ? { burst: p.burst } : {}),
          })),
        ),
      )
    fc.assert(
      fc.property(setArb, requestsArb, (set, raw) => {
        let now = 5_000_000
        let states: AlgorithmState[] | undefined
        const ceiling = Math.min(...set.policies.map((p) => Math.min(p.limit, p.burst)))
        for (const { gap, cost } of raw) {
          now += gap
          const before = structuredClone(states)
          const result = evaluate(states, now, set, Math.min(cost, ceiling))
          if (result.allowed) states = result.states
          else expect(states).toEqual(before)
          expect(result.allowed).toBe(result.outcomes.every((o) => o.allowed))
        }
      }),
      { numRuns: 300 },
    )
  })
})

describe('refund over random request streams', () => {
  /** Every state a stream passes through, with the clock and a request to try at it. */
  function statesOf(policy: Policy, raw: { gap: number; cost: number }[]) {
    return simulate(policy, cheap(raw, policy)).outcomes
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: consume then refund of the same cost, at once or later, decides as if the request never came`, () => {
      fc.assert(
        fc.property(
          shapedArb(algorithm, algorithm === 'gcra' || algorithm === 'token-bucket'),
          requestsArb,
          fc.nat(3000),
          (policy, raw, later) => {
            for (const { now, cost, state, outcome } of statesOf(policy, raw)) {
              if (!outcome.allowed) continue
              const taken = step(state, now, policy, cost).state
              const then = now + later
              expect(peekOutcome(refund(taken, then, policy, cost), then, policy)).toEqual(
                peekOutcome(state, then, policy),
              )
            }
          },
        ),
        { numRuns: 200 },
      )
    })

    it(`${algorithm}: a refund never creates state, never raises remaining above capacity, never delays a denied request`, () => {
      fc.assert(
        fc.property(
          shapedArb(algorithm, algorithm === 'gcra' || algorithm === 'token-bucket'),
          requestsArb,
          fc.integer({ min: 1, max: 40 }),
          (policy, raw, units) => {
            expect(refund(undefined, 0, policy, units)).toBeUndefined()
            for (const { now, cost, state, outcome } of statesOf(policy, raw)) {
              const refunded = refund(state, now, policy, units)
              expect(step(refunded, now, policy, 0).outcome.remaining).toBeLessThanOrEqual(capacityOf(policy))
              if (outcome.allowed) continue
              const retried = step(refunded, now, policy, cost).outcome
              if (!retried.allowed) expect(retried.retryAfter).toBeLessThanOrEqual(outcome.retryAfter)
            }
          },
        ),
        { numRuns: 200 },
      )
    })
  }

  it('a refund gives nothing back into a fixed window that has passed', () => {
    fc.assert(
      fc.property(shapedArb('fixed-window'), fc.integer({ min: 1, max: 3 }), (policy, cost) => {
        const start = 10 * policy.window
        const taken = step(undefined, start, policy, Math.min(cost, policy.limit)).state
        const next = start + policy.window
        expect(refund(taken, next, policy, cost)).toBe(taken)
        expect(refund(taken, next - 1, policy, cost)).toEqual({ start, count: 0 })
      }),
    )
  })
})
