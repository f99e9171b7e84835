import { type AlgorithmName, type Policy, type PolicySet, policySetOf } from '@sluice/core'

const BUCKETS: readonly AlgorithmName[] = ['token-bucket', 'gcra']

/** Shares are kept in whole percent: a set is cut once per percent, and rounding down keeps the nodes' sum ≤ 1. */
const STEPS = 100

/**
 * What part of each limit this node enforces alone while Redis is unreachable: the operator's
 * `weight` when given; else the key's recent traffic here (this node's part of its global count at
 * the last syncs: a node serving 90 % of a key gets 90 % of its limit, and the other its 10 %);
 * else, for a key Redis has reported nothing of, limit ÷ live nodes.
 */
export class Shares {
  readonly #sets = new Map<string, PolicySet>()

  constructor(readonly weight: number | undefined) {}

  /** The part of each limit for a key whose recent traffic here is `traffic` (undefined: unknown). */
  fraction(live: number, traffic: number | undefined): number {
    return this.weight ?? traffic ?? 1 / live
  }

  /** The set cut to `fraction` of each limit (and burst), made once per set and whole percent. */
  of(set: PolicySet, fraction: number): PolicySet {
    const steps = Math.floor(fraction * STEPS + 1e-9)
    const id = `${steps}%\0${set.id}`
    let share = this.#sets.get(id)
    if (share === undefined) {
      share = policySetOf(
        set.policies.map((p): Policy => shareOf(p, steps / STEPS)),
        id,
      )
      this.#sets.set(id, share)
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
