import fc from 'fast-check'
import { type AlgorithmName, type Policy, parsePolicy } from '../policies/policy.js'

/** The values a property's policies are drawn from; each property picks ranges its claim holds on. */
export interface PolicyRanges {
  readonly limit: readonly [min: number, max: number]
  readonly windows: readonly number[]
  readonly burst: readonly [min: number, max: number]
  readonly precisions: readonly number[]
  /** The buckets' maxDelay; without it they do not shape. */
  readonly maxDelays?: readonly number[]
  /** A fixed window starting at an offset, as a calendar period is resolved (calendar-set.ts). */
  readonly offsets?: boolean
}

/** Random policies of `algorithm`: burst (and maxDelay) for the buckets, precision for the sliding window. */
export function policyArb(algorithm: AlgorithmName, ranges: PolicyRanges): fc.Arbitrary<Policy> {
  const [minLimit, maxLimit] = ranges.limit
  const [minBurst, maxBurst] = ranges.burst
  const buckets = algorithm === 'gcra' || algorithm === 'token-bucket'
  return fc
    .record({
      limit: fc.integer({ min: minLimit, max: maxLimit }),
      window: fc.constantFrom(...ranges.windows),
      burst: fc.integer({ min: minBurst, max: maxBurst }),
      precision: fc.constantFrom(...ranges.precisions),
      maxDelay: fc.constantFrom(...(ranges.maxDelays ?? [0])),
      offset: fc.nat({ max: Math.max(...ranges.windows) - 1 }),
    })
    .map(({ limit, window, burst, precision, maxDelay, offset }): Policy => {
      const policy = parsePolicy({
        limit,
        window,
        algorithm,
        ...(buckets ? { burst } : {}),
        ...(buckets && ranges.maxDelays !== undefined ? { maxDelay } : {}),
        ...(algorithm === 'sliding-window' ? { precision } : {}),
      })
      return algorithm === 'fixed-window' && ranges.offsets === true ? { ...policy, offset: offset % window } : policy
    })
}
