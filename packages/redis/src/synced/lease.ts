import type { Policy, PolicySet } from '@sluice/core'
import { evaluate, type Outcome } from '@sluice/core/store'

/** A grant covers this node's consumption until the sync after next, so a steady key never runs dry between syncs. */
export const HORIZON_INTERVALS = 2
/**
 * The most a node holds of one policy: this share of its burst (at least 1 unit). It bounds the
 * quota stranded in a node's grant (under-admission) and the unit a killed node can lose.
 */
export const MAX_GRANT_SHARE = 0.1
/** Syncs without a request after which a lease gives back what it holds and is forgotten. */
export const IDLE_SYNCS = 10

/** The most a node holds of a policy at once (see MAX_GRANT_SHARE). */
export function maxGrant(policy: Policy): number {
  return Math.max(1, Math.floor(policy.burst * MAX_GRANT_SHARE))
}

/**
 * Units this node wants to hold of `policy`: what it asks for in HORIZON_INTERVALS at `rate`
 * (units per ms), at most `maxGrant`; 0 at rate 0.
 */
export function grantTarget(rate: number, interval: number, policy: Policy): number {
  if (rate <= 0) return 0
  return Math.min(maxGrant(policy), Math.ceil(rate * interval * HORIZON_INTERVALS))
}

/**
 * This node's demand for a key: units asked since the last sync, and the rate they make, averaged
 * over syncs (each sync's rate weighs half) so one quiet or busy interval moves it only halfway.
 */
export class Demand {
  /** Units asked since the last `rollover`. */
  asked = 0
  /** Units per ms. */
  rate = 0
  /** Syncs in a row without a request. */
  idle = 0
  #since: number

  constructor(now: number) {
    this.#since = now
  }

  /** Forgets the demand so far: the syncs ask for nothing more until a request comes. */
  clear(): void {
    this.asked = 0
    this.rate = 0
  }

  /** Closes the interval ending at `now` into the rate. */
  rollover(now: number): void {
    const elapsed = Math.max(1, now - this.#since)
    const latest = this.asked / elapsed
    this.rate = this.rate === 0 ? latest : (this.rate + latest) / 2
    this.idle = this.asked === 0 ? this.idle + 1 : 0
    this.asked = 0
    this.#since = now
  }
}

/**
 * One policy's state in Redis as the last lease call left it, on this node's clock: a token
 * bucket's tokens and when they were counted, or a GCRA's tat (then `updated` is unused).
 */
export interface SeenState {
  tokensOrTat: number
  updated: number
}

/**
 * What this node holds of one key under one policy set: per policy the units granted and not yet
 * spent, the state Redis last showed, and the key's demand. `exact`: Redis gave less than asked
 * (the quota is low), so once `held` is spent the key is decided per request until a sync's grant
 * comes back whole.
 */
export class Lease {
  readonly held: number[]
  readonly seen: (SeenState | undefined)[]
  readonly demand: Demand
  exact = false
  /** Units the last take asked for (the next asks more). */
  lastTake = 0
  /** A take in flight (true once answered, false if it failed): requests that find too little held wait for it. */
  pending: Promise<boolean> | undefined

  constructor(
    /** Redis key per policy: RedisStore's state keys. */
    readonly keys: readonly string[],
    /** The Cluster slot of the keys (0 off a Cluster). */
    readonly slot: number,
    readonly set: PolicySet,
    now: number,
  ) {
    this.held = set.policies.map(() => 0)
    this.seen = set.policies.map(() => undefined)
    this.demand = new Demand(now)
  }

  /**
   * Admits `cost` from what is held, when every policy holds enough: the outcomes a decision on the
   * state Redis last showed plus this node's grant gives (its remaining and times are this node's
   * view). Undefined when some policy holds too little.
   */
  spend(now: number, cost: number): readonly Outcome[] | undefined {
    const held = this.held
    for (let i = 0; i < held.length; i++) if ((held[i] as number) < cost) return undefined
    const { allowed, outcomes } = evaluate(this.#states(), now, this.set, cost)
    for (let i = 0; i < held.length; i++) held[i] = (held[i] as number) - cost
    // The grant was taken by Redis's own rule; a float's last bit in this view does not undo it.
    return allowed ? outcomes : outcomes.map((o) => ({ ...o, allowed: true, retryAfter: 0 }))
  }

  /** Units to ask for (> 0) or give back (< 0) per policy for the next interval at the current rate. */
  adjustments(interval: number): number[] {
    return this.set.policies.map((policy, i) => {
      const held = this.held[i] as number
      const target = grantTarget(this.demand.rate, interval, policy)
      if (held < target) return target - held
      // Demand fell: what is beyond twice the target goes back, so idle grants do not strand quota.
      if (held > 2 * target) return target - held
      return 0
    })
  }

  /** Each policy's state as this node sees it: Redis's, with what this node holds put back. */
  #states(): unknown[] {
    return this.set.policies.map((policy, i) => {
      const seen = this.seen[i]
      if (seen === undefined) return undefined
      const held = this.held[i] as number
      if (policy.algorithm === 'token-bucket') {
        return { tokens: seen.tokensOrTat + held * policy.window, updated: seen.updated }
      }
      return { tat: seen.tokensOrTat - (held * policy.window) / policy.limit }
    })
  }
}

/**
 * Whether a policy can be leased: a token bucket or GCRA that neither shapes (maxDelay), blocks nor
 * warms up. A warming one's unit costs more the colder its state when it is spent, and grants,
 * their give-backs and the tail rule count plain units (LEASE_LUA): it is decided exactly instead.
 */
export function leasable(policy: Policy): boolean {
  return (
    (policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra') &&
    policy.maxDelay === 0 &&
    policy.blockFor === 0 &&
    policy.warmup === 0
  )
}
