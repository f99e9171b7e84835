import type { AlgorithmName, Policy, PolicyOptions } from '@sluice/core'
import { capacityOf } from '@sluice/core/internal'
import fc from 'fast-check'
import { traceSet } from './parity.js'
import { type OffsetWindow, TRACE_START, type Trace, type TracePolicy, type TraceStep } from './traces.js'

const WINDOWS = [1, 7, 10, 100, 999, 1000, 3000, 60_000]
const HOUR = 3_600_000
const DAY = 24 * HOUR
/** The lengths calendar periods resolve into besides the plain ones: days of 23 and 25 hours (daylight saving), months of 28 to 31 days. */
const PERIOD_WINDOWS = [23 * HOUR, DAY, 25 * HOUR, 28 * DAY, 29 * DAY, 30 * DAY, 31 * DAY]

const isOffsetWindow = (policy: TracePolicy): policy is OffsetWindow => typeof policy === 'object' && 'offset' in policy
const parsed = (policy: TracePolicy) => traceSet([policy]).policies[0] as Policy

const ALL: readonly AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra']

const policyArbitrary = (algorithms: readonly AlgorithmName[]): fc.Arbitrary<TracePolicy> =>
  fc
    .record({
      algorithm: fc.constantFrom<AlgorithmName>(...algorithms),
      limit: fc.integer({ min: 3, max: 20 }),
      window: fc.constantFrom(...WINDOWS),
      burstFactor: fc.double({ min: 0.1, max: 2, noNaN: true }),
      precision: fc.constantFrom(1, 2, 3, 4, 5),
      delayFactor: fc.option(fc.double({ min: 0, max: 2, noNaN: true }), { nil: undefined }),
      blockFor: fc.option(fc.constantFrom(1, 50, 999, 5000), { nil: undefined, freq: 3 }),
      // gcra and token-bucket: half the time a warm-up of 0.1 to 5 windows.
      warm: fc.option(
        fc.record({ windows: fc.double({ min: 0.1, max: 5, noNaN: true }), coldFactor: fc.constantFrom(1.5, 3, 4) }),
        { nil: undefined, freq: 2 },
      ),
      // fixed-window without a period: half the time windows from the key's first request.
      firstRequest: fc.boolean(),
      // fixed-window: half the time a window starting at an offset, as a calendar period is resolved.
      period: fc.option(
        fc.record({
          window: fc.constantFrom(...WINDOWS, ...PERIOD_WINDOWS),
          offset: fc.nat({ max: 31 * DAY - 1 }),
          named: fc.boolean(),
        }),
        { nil: undefined, freq: 2 },
      ),
    })
    .map(
      ({
        algorithm,
        limit,
        window,
        burstFactor,
        precision,
        delayFactor,
        blockFor,
        warm,
        firstRequest,
        period,
      }): TracePolicy => {
        if (algorithm === 'fixed-window' && period !== undefined) {
          const at: OffsetWindow = { algorithm, limit, window: period.window, offset: period.offset % period.window }
          const named = period.named ? { ...at, name: `period-${period.window}` } : at
          return blockFor === undefined ? named : { ...named, blockFor }
        }
        const options: PolicyOptions = { algorithm, limit, window }
        if (blockFor !== undefined) options.blockFor = blockFor
        if (algorithm === 'fixed-window' && firstRequest) options.start = 'first-request'
        if (algorithm === 'gcra' || algorithm === 'token-bucket') {
          options.burst = Math.max(1, Math.round(limit * burstFactor))
          if (delayFactor !== undefined) options.maxDelay = Math.round(window * delayFactor)
          if (warm !== undefined) {
            options.warmup = Math.max(1, Math.round(window * warm.windows))
            options.coldFactor = warm.coldFactor
          }
        }
        if (algorithm === 'sliding-window' && window % precision === 0) options.precision = precision
        return options
      },
    )

/**
 * A step as generated: an advance in ms, or to `by` ms from the next boundary of the set's
 * `of`-th offset window (worked out once the trace's times are known); a plan step gives the
 * named offset windows a new limit.
 */
type Advance = number | { readonly of: number; readonly by: -1 | 0 | 1 }
type Action = TraceStep[1] | { readonly replan: number }

/**
 * Random policy sets (1–3 policies of `algorithms`, fixed windows at an offset among them) and
 * 1–40 steps of clock moves (to just before, at or after a period's boundary too), costs, peeks,
 * refunds, penalties, blocks and plan changes of named offset windows. Run from `TRACE_START`.
 */
export const traceArbitraryOf = (algorithms: readonly AlgorithmName[]): fc.Arbitrary<Trace> =>
  fc
    .uniqueArray(policyArbitrary(algorithms), {
      minLength: 1,
      maxLength: 3,
      selector: (p) => parsed(p).name,
    })
    .chain((limits) => {
      const maxCost = Math.min(3, ...limits.map((p) => capacityOf(parsed(p))))
      const longest = Math.max(...limits.map((p) => parsed(p).window))
      const periods = limits.filter(isOffsetWindow).length
      const advances: fc.Arbitrary<Advance>[] = [
        fc.constant(0),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 0, max: longest * 2 }),
      ]
      if (periods > 0) {
        advances.push(fc.record({ of: fc.nat({ max: periods - 1 }), by: fc.constantFrom<-1 | 0 | 1>(-1, 0, 1) }))
      }
      const actions: fc.WeightedArbitrary<Action>[] = [
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
      ]
      if (limits.some((p) => isOffsetWindow(p) && p.name !== undefined)) {
        // New limits no lower than the generated ones, so that every cost stays within capacity.
        actions.push({ weight: 1, arbitrary: fc.integer({ min: 3, max: 40 }).map((replan) => ({ replan })) })
      }
      return fc.record({
        limits: fc.constant(limits),
        steps: fc.array(fc.tuple(fc.oneof(...advances), fc.oneof(...actions)), { minLength: 1, maxLength: 40 }),
        start: fc.integer({ min: 0, max: 1_000_000 }),
      })
    })
    .map(({ limits, steps, start }): Trace => {
      const periods = limits.filter(isOffsetWindow)
      let now = TRACE_START + start
      const resolved = steps.map(([advance, action]): TraceStep => {
        const ms =
          typeof advance === 'number' ? advance : untilBoundary(now, periods[advance.of] as OffsetWindow, advance.by)
        now += ms
        if (typeof action !== 'object' || !('replan' in action)) return [ms, action]
        const plan = limits.map((p) => (isOffsetWindow(p) && p.name !== undefined ? { ...p, limit: action.replan } : p))
        return [ms, { plan }]
      })
      return { name: 'random', limits, steps: [[start, 'peek'], ...resolved] }
    })

/** Random traces of sets mixing every algorithm. */
export const traceArbitrary: fc.Arbitrary<Trace> = traceArbitraryOf(ALL)

/** Milliseconds from `now` to `by` ms from the end of the window of `period` that holds `now`. */
function untilBoundary(now: number, { window, offset }: OffsetWindow, by: -1 | 0 | 1): number {
  const end = now - ((now - offset) % window) + window
  return end + by - now
}

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
