import type { Policy, PolicySet } from '@sluice/core'
import { policySetOf } from '@sluice/core/internal'
import { BUCKETS } from './buckets.js'

/** Shares are kept in whole percent: a set is cut once per percent, and rounding down keeps the nodes' sum ≤ 1. */
const STEPS = 100

/**
 * What part of each limit this node enforces alone while Redis is unreachable: the operator's
 * `weight` when given; else the key's recent traffic here (this node's part of its global count at
 * the last syncs: a node serving 90 % of a key gets 90 % of its limit, and the other its 10 %);
 * else, for a key Redis has reported nothing of, limit ÷ live nodes.
 */
export class Shares {
  /**
   * Each set's cuts by whole percent. By set object, not id: two plans of a named policy share an
   * id but not their limits; and a calendar period's sets go with their period.
   */
  readonly #sets = new WeakMap<PolicySet, PolicySet[]>()

  constructor(readonly weight: number | undefined) {}

  /** The part of each limit for a key whose recent traffic here is `traffic` (undefined: unknown). */
  fraction(live: number, traffic: number | undefined): number {
    return this.weight ?? traffic ?? 1 / live
  }

  /** The set cut to `fraction` of each limit (and burst), made once per set and whole percent. */
  of(set: PolicySet, fraction: number): PolicySet {
    const steps = Math.floor(fraction * STEPS + 1e-9)
    let cuts = this.#sets.get(set)
    if (cuts === undefined) {
      cuts = []
      this.#sets.set(set, cuts)
    }
    let share = cuts[steps]
    if (share === undefined) {
      // Each policy keeps its id: the share's state is the key's, whatever the share and the plan.
      share = policySetOf(
        set.policies.map((p): Policy => shareOf(p, steps / STEPS)),
        `${steps}%\0${set.id}`,
      )
      cuts[steps] = share
    }
    return share
  }
}

/**
 * One node's part of a policy, rounded down (a window may share 0: the node then admits nothing
 * alone); a bucket keeps at least 1 of rate and burst, as its transitions need, and its burst
 * shrinks in proportion.
 */
function shareOf(policy: Policy, fraction: number): Policy {
  if (!BUCKETS.includes(policy.algorithm)) return { ...policy, limit: Math.floor(policy.limit * fraction) }
  return {
    ...policy,
    limit: Math.max(1, Math.floor(policy.limit * fraction)),
    burst: Math.max(1, Math.floor(policy.burst * fraction)),
  }
}
