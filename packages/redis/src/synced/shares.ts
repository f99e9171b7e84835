import { type AlgorithmName, type Policy, type PolicySet, policySetOf } from '@sluice/core'

const BUCKETS: readonly AlgorithmName[] = ['token-bucket', 'gcra']

/** Policy sets cut to one node's share of each limit, made once per set and fleet size. */
export class Shares {
  readonly #sets = new Map<string, PolicySet>()

  of(set: PolicySet, live: number): PolicySet {
    const id = `${live}\0${set.id}`
    let share = this.#sets.get(id)
    if (share === undefined) {
      share = policySetOf(
        set.policies.map((p): Policy => shareOf(p, live)),
        id,
      )
      this.#sets.set(id, share)
    }
    return share
  }
}

/**
 * One node's part of a policy: limit ÷ live nodes, rounded down (a window may share 0: the node
 * then admits nothing alone); a bucket keeps at least 1 of rate and burst, as its transitions
 * need, and its burst shrinks in proportion.
 */
function shareOf(policy: Policy, live: number): Policy {
  if (!BUCKETS.includes(policy.algorithm)) return { ...policy, limit: Math.floor(policy.limit / live) }
  return {
    ...policy,
    limit: Math.max(1, Math.floor(policy.limit / live)),
    burst: Math.max(1, Math.floor(policy.burst / live)),
  }
}
