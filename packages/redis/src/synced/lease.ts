import type { Policy, PolicySet } from '@sluice/core'
import { type AlgorithmState, evaluate, type Outcome } from '@sluice/core/store'

/** A grant covers this node's consumption until the sync after next, so a steady key never runs dry between syncs. */
export const HORIZON_INTERVALS = 2
/** Syncs without a request after which a lease gives back what it holds and is forgotten. */
export const IDLE_SYNCS = 10

/**
 * How grants are sized (the `lease` option), as shares of each key's burst that the fleet splits
 * by node part (`weight`, else ÷ live nodes): seed 001 §4.4 (5)'s pre-allocation and a bound on
 * what grants hold in total, which is both the quota a fleet can strand (under-admission) and
 * what its nodes can lose when killed.
 */
export interface LeaseSizing {
  /** Share of the burst handed out up front: a node's first take of a key asks for its part of it. */
  readonly allocation: number
  /** Share of the burst the fleet's grants may hold at once: a node holds at most its part of it. */
  readonly cap: number
}

export const DEFAULT_LEASE_SIZING: LeaseSizing = Object.freeze({ allocation: 0, cap: 0.1 })

/** A share of the burst in whole units; the epsilon keeps 0.1 × 0.5 × 1000 at 50, not 49. */
const unitsOf = (policy: Policy, share: number): number => Math.floor(policy.burst * share + 1e-9)

/**
 * The most this node holds of `policy`: its `part` of the fleet's cap, in whole units. 0 when that
 * is under one unit: the key is then decided per request, so the cap holds for small bursts too.
 */
export function maxHeld(policy: Policy, sizing: LeaseSizing, part: number): number {
  return unitsOf(policy, sizing.cap * part)
}

/** Units this node's first take of a key asks for: its `part` of the allocation (never beyond `maxHeld`). */
export function allocationOf(policy: Policy, sizing: LeaseSizing, part: number): number {
  return Math.min(maxHeld(policy, sizing, part), unitsOf(policy, sizing.allocation * part))
}

/**
 * Units this node wants to hold of a policy: what it asks for in HORIZON_INTERVALS at `rate`
 * (units per ms), at most `most` (see maxHeld); 0 at rate 0.
 */
export function grantTarget(rate: number, interval: number, most: number): number {
  if (rate <= 0) return 0
  return Math.min(most, Math.ceil(rate * interval * HORIZON_INTERVALS))
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
  /** Per policy the state as the last reply gave it, on Redis's clock: sent back to rebuild a state Redis forgot. */
  readonly view: (readonly [number, number] | undefined)[]
  /** Per policy the units admitted alone (Redis unreachable) not yet sent to be charged. */
  readonly charge: number[]
  /** Per policy the units admitted alone sent to be charged, not yet answered. */
  readonly charging: number[]
  /**
   * This node's share of the key while Redis does not answer (see `spendAlone`): the share's
   * states, cut from what the last reply showed; undefined until needed, and again after a reply.
   */
  alone: { readonly share: PolicySet; states: readonly (AlgorithmState | undefined)[] } | undefined
  /** Until this local time a request is denied here: an exact take was refused (as RedisStore's denied cache). */
  deniedUntil = 0
  /** When that take was refused: a clock read before it (the decision clock corrected back) ends the denial. */
  deniedAt = 0
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
    this.view = set.policies.map(() => undefined)
    this.charge = set.policies.map(() => 0)
    this.charging = set.policies.map(() => 0)
    this.demand = new Demand(now)
  }

  /**
   * A decision while Redis does not answer: from what is held (Redis counted it when it granted
   * it), else on this node's `share` of what the bucket held at the last reply, refilled at the
   * share's rate; what is admitted so is charged to Redis's state once it answers again. A key
   * never answered for starts from a full share.
   */
  spendAlone(now: number, share: PolicySet, cost: number): readonly Outcome[] {
    const held = this.spend(now, cost)
    if (held !== undefined) return held
    if (this.alone?.share !== share) this.alone = { share, states: this.#shareStates(now, share) }
    const { allowed, outcomes, states } = evaluate(this.alone.states, now, share, cost)
    if (allowed) {
      this.alone.states = states
      for (let i = 0; i < this.charge.length; i++) this.charge[i] = (this.charge[i] as number) + cost
    }
    return outcomes
  }

  /** Whether units admitted alone are still to be charged, or in flight. */
  owes(): boolean {
    for (let i = 0; i < this.charge.length; i++)
      if ((this.charge[i] as number) + (this.charging[i] as number) > 0) return true
    return false
  }

  /**
   * The denial of a request whose exact take Redis refused: the outcomes on the state it showed,
   * denied whatever a float's last bit says here; later requests are denied here until retryAfter.
   */
  refuse(now: number, cost: number): readonly Outcome[] {
    const { outcomes } = evaluate(this.#states(), now, this.set, cost)
    const denied = outcomes.map((o, i) =>
      (this.held[i] as number) >= cost
        ? o
        : { ...o, allowed: false, remaining: 0, retryAfter: Math.max(1, o.retryAfter) },
    )
    let retry = 0
    for (const o of denied) if (!o.allowed) retry = Math.max(retry, o.retryAfter)
    this.deniedAt = now
    this.deniedUntil = now + retry
    return denied
  }

  /**
   * Each policy's state on `share` from the last reply: the bucket refilled to now, cut to the
   * share (a token bucket's tokens in proportion to its burst; a GCRA's TAT as it is, since the
   * share's tolerance is the whole's and its units are that much longer), less what this node
   * admitted alone and Redis has not yet been charged.
   */
  #shareStates(now: number, share: PolicySet): (AlgorithmState | undefined)[] {
    return this.set.policies.map((policy, i) => {
      const cut = share.policies[i] as Policy
      const seen = this.seen[i]
      const owed = (this.charge[i] as number) + (this.charging[i] as number)
      if (policy.algorithm === 'token-bucket') {
        const full = policy.burst * policy.window
        const refilled =
          seen === undefined ? full : Math.min(full, seen.tokensOrTat + Math.max(0, now - seen.updated) * policy.limit)
        const tokens = (refilled * cut.burst) / policy.burst - owed * cut.window
        return { tokens, updated: now, burst: cut.burst, limit: cut.limit }
      }
      const interval = cut.window / cut.limit
      // Beyond tolerance a TAT is spent all the same, and further than a window beyond it reads as none.
      const tat = Math.min(Math.max(now, seen?.tokensOrTat ?? now) + owed * interval, now + interval * cut.burst)
      return { tat, limit: cut.limit }
    })
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

  /**
   * Units to ask for (> 0) or give back (< 0) per policy for the next interval at the current rate,
   * `most[i]` the most this node may hold of policy i (see maxHeld).
   */
  adjustments(interval: number, most: readonly number[]): number[] {
    return this.set.policies.map((_, i) => {
      const held = this.held[i] as number
      const bound = most[i] as number
      const target = grantTarget(this.demand.rate, interval, bound)
      if (held < target) return target - held
      // Demand fell: what is beyond twice the target goes back, so idle grants do not strand quota;
      // the bound fell (more live nodes): what is beyond it goes back, so the fleet stays under its cap.
      if (held > 2 * target || held > bound) return target - held
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
