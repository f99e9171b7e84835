import type { Outcome } from '../algorithms/outcome.js'
import { MAX_HEADER_INTEGER, type Policy, type PolicySet, policySetOf } from '../policies/policy.js'

/** What one policy has counted for a key, read without consuming (`limiter.usage`). */
export interface PolicyUsage {
  readonly name: string
  readonly limit: number
  /**
   * Units counted against the policy now. A fixed or sliding window reports its count as stored,
   * beyond `limit` after a penalty or an over-spent settle; the sliding window's is its weighted
   * estimate, rounded up. A token bucket or GCRA reports what is missing from a full bucket
   * (`burst` less what remains), a sliding log or a blocking policy `limit` less what remains.
   */
  readonly used: number
  /** What a request could take now (never negative): `peek`'s `remaining`. */
  readonly remaining: number
  /** Milliseconds until the policy is back to its full quota (a calendar period: the next one's start). */
  readonly resetAfter: number
}

/** The algorithms whose counts read against any limit as they are (see ARCHITECTURE.md, "A policy's identity"). */
const COUNTING = new Set(['fixed-window', 'sliding-window'])

/**
 * The policy whose peek reads the count as stored: the same id (so the same state in every
 * store), under a limit no count reaches, so that its `remaining` is that limit less the count,
 * over-spend included. Only for windows without `blockFor`: a bucket's state refills at its
 * limit, and a block reads as nothing remaining.
 */
function counterOf(policy: Policy): Policy | undefined {
  if (!COUNTING.has(policy.algorithm) || policy.blockFor > 0) return undefined
  return Object.freeze({ ...policy, limit: MAX_HEADER_INTEGER })
}

/** One counting set per set object (a calendar period's resolved set included), so a store's per-set caches stay warm. */
const counters = new WeakMap<PolicySet, PolicySet | null>()

/** The set to peek for the stored counts of `set`'s windows; undefined when none of its policies counts. */
export function countingSetOf(set: PolicySet): PolicySet | undefined {
  let counting = counters.get(set)
  if (counting === undefined) {
    const policies = set.policies.map(counterOf)
    counting = policies.some((p) => p !== undefined)
      ? policySetOf(
          set.policies.map((p, i) => policies[i] ?? p),
          set.id,
        )
      : null
    counters.set(set, counting)
  }
  return counting ?? undefined
}

/** Each policy's usage from a peek of `set` and, when it has one, of its counting set. */
export function usageOf(
  set: PolicySet,
  outcomes: readonly Outcome[],
  counts: readonly Outcome[] | undefined,
): PolicyUsage[] {
  return set.policies.map((policy, i) => {
    const outcome = outcomes[i] as Outcome
    const counted = counts?.[i]
    const full = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra' ? policy.burst : policy.limit
    const used =
      counted !== undefined && counterOf(policy) !== undefined
        ? MAX_HEADER_INTEGER - counted.remaining
        : full - outcome.remaining
    return {
      name: policy.name,
      limit: policy.limit,
      used,
      remaining: outcome.remaining,
      resetAfter: outcome.resetAfter,
    }
  })
}
