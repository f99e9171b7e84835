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
