import type { Outcome } from '../algorithms/index.js'
import { ConfigError } from '../diagnostics/errors.js'
import { type Policy, type PolicySet, policySetOf } from '../policies/policy.js'
import { type Awaitable, isThenable, type Store } from './contract.js'
import { MemoryStore } from './memory-store.js'

/** Options of `FallbackShare`: `processes` or `weight`, and optionally `store` and `now`. */
export interface FallbackShareOptions {
  /**
   * How many processes share the limits evenly: a whole number, or a function read at each
   * decision (`@sluice/redis`'s `FleetSize` counts the live processes). Each enforces limit ÷
   * processes. Give this or `weight`.
   */
  processes?: number | (() => number)
  /**
   * This process's part of each limit (0 < weight ≤ 1) when processes differ in size: a node that
   * takes 90 % of the traffic `0.9`, the other `0.1`. The weights of a fleet should sum to at most 1.
   * Give this or `processes`.
   */
  weight?: number
  /** Where this process counts its share. Default: a new `MemoryStore` (on the same clock as `now`). */
  store?: Store
  /** The clock of the hold after a fault, in epoch ms. Default `Date.now`. */
  now?: () => number
}

/**
 * A fallback for a shared store (`onStoreError`) that enforces this process's share of each
 * limit, so that a fleet admits about the limit while the shared store is down, not n times it.
 * Each policy's limit (and a bucket's burst) becomes ⌊limit × share⌋, at least 1 (share: `weight`,
 * or 1 ÷ processes), so a limit below the number of processes admits up to one request per
 * process per window.
 *
 * The limiter also tells it what the shared store admitted (`admitted`), so a share counts what
 * this process already admitted in the current window when the fault begins; and for a window
 * after its last decision, or after the shared store counts fewer of a window than this process
 * admitted (it came back empty, or was flushed), a request the shared store admits is denied once
 * this process's share is spent. A fleet's window of the
 * fault admits at most Σ max(admitted before the fault, share) over its processes: the limit when
 * shares follow the traffic, at most twice it however uneven.
 */
export class FallbackShare implements Store {
  readonly #store: Store
  /** This process's part of each limit now. */
  readonly #fraction: () => number
  readonly #processes: () => number
  readonly #now: () => number
  /** Until when (epoch ms) a request the shared store admits must fit this process's share too. */
  #holdUntil = Number.NEGATIVE_INFINITY
  /**
   * The shared set per set object and share: one object each, as stores cache by identity. Not
   * per set id: the sets of two plans of a named policy share an id.
   */
  readonly #shares = new WeakMap<PolicySet, Map<number, PolicySet>>()

  constructor(options: FallbackShareOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { processes: 4 } or { weight: 0.25 }')
    }
    const { processes, weight, now = Date.now } = options
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.#now = now
    const { store = new MemoryStore({ now }) } = options
    this.#store = store
    if (weight !== undefined) {
      if (processes !== undefined) {
        throw new ConfigError('weight', weight, 'cannot be given with processes: give one (weight for uneven shares)')
      }
      if (typeof weight !== 'number' || !(weight > 0 && weight <= 1)) {
        throw new ConfigError('weight', weight, 'must be a share of each limit above 0 and at most 1, such as 0.9')
      }
      this.#processes = () => 1
      this.#fraction = () => weight
      return
    }
    if (typeof processes === 'function') this.#processes = processes
    else if (Number.isSafeInteger(processes) && (processes as number) >= 1) this.#processes = () => processes as number
    else
      throw new ConfigError(
        'processes',
        processes,
        'must be a whole number of processes of at least 1, or a function returning one (or give weight)',
      )
    this.#fraction = () => 1 / this.processes
  }

  /** The processes the limits are divided among now (a function's answer below 1 or not whole counts as 1; 1 with `weight`). */
  get processes(): number {
    const n = this.#processes()
    return Number.isSafeInteger(n) && n > 1 ? n : 1
  }

  /** The fallback decides: the shared store failed. Its share counts from what this process admitted. */
  consume(key: string, set: PolicySet, cost: number): Awaitable<readonly Outcome[]> {
    this.#holdUntil = Math.max(this.#holdUntil, this.#now() + holdMs(set))
    return this.#store.consume(key, this.#shareOf(set), cost)
  }

  peek(key: string, set: PolicySet): Awaitable<readonly Outcome[]> {
    return this.#store.peek(key, this.#shareOf(set))
  }

  reset(key: string, set: PolicySet): Awaitable<void> {
    return this.#store.reset(key, this.#shareOf(set))
  }

  /**
   * The shared store admitted `cost` for `key` with `outcomes` (the limiter calls this): counted
   * against this process's share. A window's count in the shared store below this process's own
   * says the store forgot it (FLUSHALL, an empty restart): the hold begins as after a fault.
   * Within the hold, the share's outcomes when it is spent (the request is denied); otherwise
   * undefined. A failure to count is ignored: the shared store decided.
   */
  admitted(
    key: string,
    set: PolicySet,
    cost: number,
    outcomes: readonly Outcome[],
  ): Awaitable<readonly Outcome[] | undefined> {
    const share = this.#shareOf(set)
    let counted: Awaitable<readonly Outcome[]>
    try {
      counted = this.#store.consume(key, share, cost)
    } catch {
      return undefined
    }
    const judge = (own: readonly Outcome[]) => {
      const now = this.#now()
      if (forgot(set, outcomes, share, own)) this.#holdUntil = Math.max(this.#holdUntil, now + holdMs(set))
      return now < this.#holdUntil ? deniedOf(own) : undefined
    }
    return isThenable(counted)
      ? (counted as Promise<readonly Outcome[]>).then(judge, () => undefined)
      : judge(counted as readonly Outcome[])
  }

  #shareOf(set: PolicySet): PolicySet {
    const fraction = this.#fraction()
    if (fraction === 1) return set
    let byFraction = this.#shares.get(set)
    if (byFraction === undefined) {
      byFraction = new Map()
      this.#shares.set(set, byFraction)
    }
    let share = byFraction.get(fraction)
    if (share === undefined) {
      // The set keeps its id, so a key's counts carry over when the number of processes changes.
      share = policySetOf(
        set.policies.map((policy) => shareOf(policy, fraction)),
        set.id,
      )
      byFraction.set(fraction, share)
    }
    return share
  }
}

function shareOf(policy: Policy, fraction: number): Policy {
  // The epsilon keeps 0.9 × 50 at 45, not 44.99….
  return {
    ...policy,
    limit: Math.max(1, Math.floor(policy.limit * fraction + 1e-9)),
    burst: Math.max(1, Math.floor(policy.burst * fraction + 1e-9)),
  }
}

/** Policies whose counts the shared store and this process's share keep alike (a bucket's refill differs). */
const COUNTED: ReadonlySet<string> = new Set(['fixed-window', 'sliding-window', 'sliding-log'])

/**
 * Whether the shared store counts fewer of a window than this process alone admitted (one unit of
 * slack for a sliding window's estimates): then it has forgotten them.
 */
function forgot(set: PolicySet, outcomes: readonly Outcome[], share: PolicySet, own: readonly Outcome[]): boolean {
  for (let i = 0; i < set.policies.length; i++) {
    const policy = set.policies[i] as Policy
    if (!COUNTED.has(policy.algorithm)) continue
    const stored = policy.limit - (outcomes[i] as Outcome).remaining
    const counted = (share.policies[i] as Policy).limit - (own[i] as Outcome).remaining
    if (counted > stored + 1) return true
  }
  return false
}

/** The outcomes when one denies; else undefined. */
function deniedOf(outcomes: readonly Outcome[]): readonly Outcome[] | undefined {
  return outcomes.every((outcome) => outcome.allowed) ? undefined : outcomes
}

/**
 * How long what was admitted before a decision still counts: a window (a sliding window's one
 * sub-window more), a bucket's time to refill its burst.
 */
function holdMs(set: PolicySet): number {
  let ms = 0
  for (const policy of set.policies) {
    const refill = policy.window * Math.max(1, policy.burst / policy.limit)
    const slide = policy.algorithm === 'sliding-window' ? policy.window / policy.precision : 0
    ms = Math.max(ms, refill + slide)
  }
  return ms
}
