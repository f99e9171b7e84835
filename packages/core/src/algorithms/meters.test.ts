import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ALGORITHMS, type AlgorithmName, type Policy, parsePolicy } from '../policies/policy.js'
import { type AlgorithmState, type Kept, meters, step } from './index.js'
import { type PolicyRanges, policyArb } from './policies.test-util.js'

const RANGES: PolicyRanges = {
  limit: [1, 40],
  windows: [100, 250, 1000, 1500],
  burst: [1, 20],
  precisions: [1, 2, 5, 10],
  maxDelays: [0, 100, 700],
  offsets: true,
}

/** Steps of clock moves (some backwards, as NTP may) and costs; cost 0 is a report. */
const stepsArb = fc.array(
  fc.record({ gap: fc.integer({ min: -30, max: 400 }), cost: fc.integer({ min: 0, max: 4 }) }),
  { minLength: 1, maxLength: 200 },
)

/** A meter's state as the transitions keep it, without what a meter adds (running totals, head, expiry). */
function plain(algorithm: AlgorithmName, state: AlgorithmState, policy: Policy): unknown {
  if (state === undefined) return undefined
  const meter = meters[algorithm]
  const {
    expiry: _e,
    protectedUntil: _p,
    total: _t,
    head: _h,
    used: _u,
    ...rest
  } = meter.toState(state as Kept, policy) as Record<string, unknown>
  return rest
}

describe('meters decide as the transitions do', () => {
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: same outcomes and states over random steps`, () => {
      fc.assert(
        fc.property(policyArb(algorithm, RANGES), stepsArb, (policy, steps) => {
          let now = 1_000_000
          let state: AlgorithmState | undefined
          let kept: Kept | undefined
          const meter = meters[algorithm]
          for (const { gap, cost } of steps) {
            now += gap
            const result = step(state, now, policy, cost)
            expect(meter.decide(kept, now, policy, cost)).toEqual(result.outcome)
            if (result.outcome.allowed && cost > 0) {
              state = result.state
              kept = meter.take(kept, now, policy, cost)
              expect(plain(algorithm, kept, policy)).toEqual(state)
            }
          }
        }),
        { numRuns: 200 },
      )
    })
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a spare (an expired or reset state) is rewritten as a new state would be`, () => {
      fc.assert(
        fc.property(policyArb(algorithm, RANGES), stepsArb, fc.integer({ min: 1, max: 4 }), (policy, steps, cost) => {
          const meter = meters[algorithm]
          let now = 1_000_000
          let spare: Kept | undefined
          for (const step of steps) {
            now += Math.max(0, step.gap)
            if (step.cost > 0 && meter.decide(spare, now, policy, step.cost).allowed) {
              spare = meter.take(spare, now, policy, step.cost)
            }
          }
          const fresh = meter.take(undefined, now, policy, cost)
          const reused = meter.take(undefined, now, policy, cost, spare)
          expect(plain(algorithm, reused, policy)).toEqual(plain(algorithm, fresh, policy))
          // What a meter keeps beside the transition's state (a sliding window's oldest count) too.
          expect(meter.decide(reused, now, policy, cost)).toEqual(meter.decide(fresh, now, policy, cost))
          if (spare !== undefined) expect(reused).toBe(spare)
        }),
        { numRuns: 100 },
      )
    })
  }

  it('sliding-window: a state read back from the pure functions decides and reads as it was', () => {
    // Refunds and penalties hand the meter an array of counts; it keeps them without one when
    // only the newest two sub-windows hold any, which this checks both ways.
    const meter = meters['sliding-window']
    const sparseCount = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 9 }))
    fc.assert(
      fc.property(
        policyArb('sliding-window', RANGES),
        fc.array(sparseCount, { minLength: 61, maxLength: 61 }),
        fc.integer({ min: 0, max: 1500 }),
        fc.integer({ min: 0, max: 4 }),
        (policy, pool, offset, cost) => {
          const size = policy.window / policy.precision
          const start = 1_000_020 - (1_000_020 % size)
          const state = { start, counts: pool.slice(0, policy.precision + 1) }
          const kept = meter.fromState(state)
          expect(plain('sliding-window', kept, policy)).toEqual(state)
          const now = start + offset
          expect(meter.decide(kept, now, policy, cost)).toEqual(step(state, now, policy, cost).outcome)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('sliding-log: a state read back from the pure functions decides, reads and takes as it was', () => {
    // Refunds and penalties hand the meter arrays; it keeps a log of one entry without them,
    // which this checks both ways, then with one more admission (arrays made, or not).
    const meter = meters['sliding-log']
    const entryArb = fc.record({ age: fc.integer({ min: 0, max: 1600 }), cost: fc.integer({ min: 1, max: 4 }) })
    const logArb = fc.oneof(
      fc.array(entryArb, { minLength: 1, maxLength: 1 }),
      fc.array(entryArb, { minLength: 0, maxLength: 4 }),
    )
    fc.assert(
      fc.property(
        policyArb('sliding-log', RANGES),
        logArb,
        fc.integer({ min: 0, max: 1600 }),
        fc.integer({ min: 0, max: 4 }),
        (policy, entries, gap, cost) => {
          const at = 1_000_000
          // Oldest first, one entry per millisecond, as the transition keeps them.
          const times = [...new Set(entries.map(({ age }) => at - age))].sort((a, b) => a - b)
          const state = { times, costs: times.map((_, i) => (entries[i] as { cost: number }).cost) }
          const kept = meter.fromState(state)
          expect(plain('sliding-log', kept, policy)).toEqual(state)
          const now = at + gap
          const result = step(state, now, policy, cost)
          expect(meter.decide(kept, now, policy, cost)).toEqual(result.outcome)
          if (result.outcome.allowed && cost > 0) {
            expect(plain('sliding-log', meter.take(kept, now, policy, cost), policy)).toEqual(result.state)
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('sliding-log: units admitted in one millisecond, then another cost, read back as one entry', () => {
    // Found by the random steps above: the log of one entry per unit took its costs per entry,
    // so two cost-1 admissions and a cost-2 one at the same millisecond read as [1, 3].
    const policy = parsePolicy({ limit: 4, window: 100, algorithm: 'sliding-log' })
    const meter = meters['sliding-log']
    let kept: Kept | undefined
    let state: AlgorithmState | undefined
    for (const cost of [1, 1, 2]) {
      kept = meter.take(kept, 1_000_000, policy, cost)
      state = step(state, 1_000_000, policy, cost).state
    }
    expect(plain('sliding-log', kept, policy)).toEqual({ times: [1_000_000], costs: [4] })
    expect(state).toEqual({ times: [1_000_000], costs: [4] })
  })

  it('sliding-log: a long run keeps the log compact (entries before head are dropped)', () => {
    const policy = parsePolicy({ limit: 1000, window: 1000, algorithm: 'sliding-log' })
    const meter = meters['sliding-log']
    let kept: Kept | undefined
    for (let now = 0; now < 20_000; now += 2) kept = meter.take(kept, now, policy, 1)
    const { times } = kept as unknown as { times: number[] }
    expect(times.length).toBeLessThanOrEqual(2 * 500 + 32)
  })

  it('sliding-log: a busy log that moves its live entries down still decides and reads as the transition', () => {
    // The random steps above seldom drop 32 entries from a log of 40 at most, so the move down
    // (entries from head on moved to the start, with costs or without) is driven here: at least
    // 2 s of steps of a 1 s window hold at most 120 live entries, so every run moves down.
    const meter = meters['sliding-log']
    fc.assert(
      fc.property(
        fc.integer({ min: 20, max: 120 }),
        fc.array(fc.record({ gap: fc.integer({ min: 5, max: 25 }), cost: fc.constantFrom(1, 1, 1, 2) }), {
          minLength: 400,
          maxLength: 600,
        }),
        fc.boolean(),
        (limit, steps, unitsOnly) => {
          const policy = parsePolicy({ limit, window: 1000, algorithm: 'sliding-log' })
          let now = 1_000_000
          let state: AlgorithmState | undefined
          let kept: Kept | undefined
          let movedDown = 0
          for (const { gap, cost: drawn } of steps) {
            now += gap
            const cost = unitsOnly ? 1 : drawn
            const result = step(state, now, policy, cost)
            expect(meter.decide(kept, now, policy, cost)).toEqual(result.outcome)
            if (!result.outcome.allowed) continue
            const headBefore = (kept as { head?: number } | undefined)?.head ?? 0
            state = result.state
            kept = meter.take(kept, now, policy, cost)
            // Moved down, not emptied: an emptied log starts again with the one entry just taken.
            const { head, times } = kept as unknown as { head: number; times: number[] }
            if (headBefore > 0 && head === 0 && times.length > 1) movedDown++
            expect(plain('sliding-log', kept, policy)).toEqual(state)
          }
          return movedDown > 0
        },
      ),
      { numRuns: 60 },
    )
  })
})
