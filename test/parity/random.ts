import { type AlgorithmName, type PolicyOptions, parsePolicy } from '@sluice/core'
import { capacityOf } from '@sluice/core/store'
import fc from 'fast-check'
import type { Trace, TraceStep } from './traces.js'

const WINDOWS = [1, 7, 10, 100, 999, 1000, 3000, 60_000]

const policyArbitrary: fc.Arbitrary<PolicyOptions> = fc
  .record({
    algorithm: fc.constantFrom<AlgorithmName>('fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'),
    limit: fc.integer({ min: 3, max: 20 }),
    window: fc.constantFrom(...WINDOWS),
    burstFactor: fc.double({ min: 0.1, max: 2, noNaN: true }),
    precision: fc.constantFrom(1, 2, 3, 4, 5),
    delayFactor: fc.option(fc.double({ min: 0, max: 2, noNaN: true }), { nil: undefined }),
    blockFor: fc.option(fc.constantFrom(1, 50, 999, 5000), { nil: undefined, freq: 3 }),
  })
  .map(({ algorithm, limit, window, burstFactor, precision, delayFactor, blockFor }) => {
    const options: PolicyOptions = { algorithm, limit, window }
    if (blockFor !== undefined) options.blockFor = blockFor
    if (algorithm === 'gcra' || algorithm === 'token-bucket') {
      options.burst = Math.max(1, Math.round(limit * burstFactor))
      if (delayFactor !== undefined) options.maxDelay = Math.round(window * delayFactor)
    }
    if (algorithm === 'sliding-window' && window % precision === 0) options.precision = precision
    return options
  })

/** Random policy sets (1–3 policies, any algorithm) and 1–40 steps of clock moves, costs, peeks and refunds. */
export const traceArbitrary: fc.Arbitrary<Trace> = fc
  .uniqueArray(policyArbitrary, {
    minLength: 1,
    maxLength: 3,
    selector: (p) => parsePolicy(p).name,
  })
  .chain((limits) => {
    const maxCost = Math.min(3, ...limits.map((p) => capacityOf(parsePolicy(p))))
    const longest = Math.max(...limits.map((p) => Number(p.window)))
    const step: fc.Arbitrary<TraceStep> = fc.tuple(
      fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: longest * 2 })),
      fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 1, max: maxCost }) },
        { weight: 1, arbitrary: fc.constant('peek' as const) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: maxCost }).map((refund) => ({ refund })) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 12 }).map((penalty) => ({ penalty })) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: longest * 2 }).map((block) => ({ block })) },
        {
          weight: 2,
          arbitrary: fc
            .tuple(fc.integer({ min: 1, max: maxCost }), fc.integer({ min: 0, max: longest * 2 }))
            .map(([refund, ago]) => ({ refund, ago })),
        },
      ),
    )
    return fc.record({
      name: fc.constant('random'),
      limits: fc.constant(limits),
      steps: fc.array(step, { minLength: 1, maxLength: 40 }),
      start: fc.integer({ min: 0, max: 1_000_000 }),
    })
  })
  .map(({ start, ...trace }) => ({ ...trace, steps: [[start, 'peek'] as TraceStep, ...trace.steps] }))

const DAY = 86_400_000
const TIME_ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kathmandu']

/**
 * A named window a plan step may change the limit of: a fixed or sliding window, or a calendar
 * period (a day, week or month in a time zone, sometimes anchored to a billing day).
 */
const countedPolicyArbitrary: fc.Arbitrary<PolicyOptions> = fc.oneof(
  fc
    .record({
      algorithm: fc.constantFrom<AlgorithmName>('fixed-window', 'sliding-window'),
      window: fc.constantFrom(...WINDOWS),
      precision: fc.constantFrom(1, 2, 3, 4, 5),
    })
    .map(({ algorithm, window, precision }) => {
      const options: PolicyOptions = { algorithm, limit: 1, window }
      if (algorithm === 'sliding-window' && window % precision === 0) options.precision = precision
      return options
    }),
  fc
    .record({
      period: fc.constantFrom('day' as const, 'week' as const, 'month' as const),
      timeZone: fc.constantFrom(...TIME_ZONES),
      anchor: fc.option(fc.constantFrom('2025-01-31', '2025-02-15', '2025-03-29'), { nil: undefined }),
    })
    .map(({ period, timeZone, anchor }) => {
      const options: PolicyOptions = { limit: 1, period, timeZone }
      if (anchor !== undefined && period === 'month') options.anchor = anchor
      return options
    }),
)

const limitArbitrary = fc.integer({ min: 3, max: 20 })

/**
 * Random sets of 1–3 named counted windows (what every store that counts serves, SyncedStore
 * included) and 1–40 steps of clock moves (up to twice the longest window: calendar periods turn),
 * costs, peeks, refunds (some with `admittedAt`) and plan changes: some of the same names with new limits.
 */
export const countedTraceArbitrary: fc.Arbitrary<Trace> = fc
  .tuple(fc.array(countedPolicyArbitrary, { minLength: 1, maxLength: 3 }), fc.array(limitArbitrary, { minLength: 3 }))
  .chain(([shapes, limits]) => {
    const named = shapes.map((shape, i): PolicyOptions => ({ ...shape, name: `p${i}`, limit: limits[i] as number }))
    const longest = Math.max(...named.map((p) => (p.period === undefined ? Number(p.window) : 31 * DAY)))
    // Some of the policies (a plan without a policy is another set holding the others), each with a new limit.
    const plan = fc
      .tuple(
        fc.array(limitArbitrary, { minLength: named.length, maxLength: named.length }),
        fc.subarray(
          named.map((_, i) => i),
          { minLength: 1 },
        ),
      )
      .map(([next, kept]): TraceStep[1] => ({ plan: kept.map((i) => ({ ...named[i], limit: next[i] as number })) }))
    const step: fc.Arbitrary<TraceStep> = fc.tuple(
      fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 0, max: longest * 2 })),
      fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }) },
        { weight: 1, arbitrary: fc.constant('peek' as const) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 3 }).map((refund) => ({ refund })) },
        {
          weight: 2,
          arbitrary: fc
            .tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: longest * 2 }))
            .map(([refund, ago]) => ({ refund, ago })),
        },
        { weight: 2, arbitrary: plan },
      ),
    )
    return fc.record({
      name: fc.constant('random counted'),
      limits: fc.constant(named),
      steps: fc.array(step, { minLength: 1, maxLength: 40 }),
      // Anywhere in about a year, so calendar periods meet month ends and daylight-saving changes.
      start: fc.integer({ min: 0, max: 400 * DAY }),
    })
  })
  .map(({ start, ...trace }) => ({ ...trace, steps: [[start, 'peek'] as TraceStep, ...trace.steps] }))
