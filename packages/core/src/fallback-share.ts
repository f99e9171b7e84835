import type { Outcome } from './algorithms/index.js'
import { ConfigError } from './errors.js'
import { type Policy, type PolicySet, policySetOf } from './policy.js'
import type { Awaitable, Store } from './store.js'
import { MemoryStore } from './stores/memory-store.js'

/** Options of `FallbackShare`. */
export interface FallbackShareOptions {
  /**
   * How many processes share the limits: a whole number, or a function read at each decision
   * (`@sluice/redis`'s `FleetSize` counts the live processes). Each enforces limit ÷ processes.
   */
  processes: number | (() => number)
  /** Where this process counts its share. Default: a new `MemoryStore`. */
  store?: Store
}

/**
 * A fallback for a shared store (`onStoreError`) that enforces this process's share of each
 * limit, so that a fleet of n processes admits about the limit while the shared store is down,
 * not n times it. Each policy's limit (and a bucket's burst) becomes ⌊limit ÷ n⌋, at least 1, so a
 * limit below the number of processes admits up to one request per process per window.
 */
export class FallbackShare implements Store {
  readonly #store: Store
  readonly #processes: () => number
  /**
   * The shared set per set object and process count: one object each, as stores cache by
   * identity. Not per set id: the sets of two plans of a named policy share an id.
   */
  readonly #shares = new WeakMap<PolicySet, Map<number, PolicySet>>()

  constructor(options: FallbackShareOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { processes: 4 }')
    }
    const { processes, store = new MemoryStore() } = options
    if (typeof processes === 'function') this.#processes = processes
    else if (Number.isSafeInteger(processes) && processes >= 1) this.#processes = () => processes
    else
      throw new ConfigError(
        'processes',
        processes,
        'must be a whole number of processes of at least 1, or a function returning one',
      )
    this.#store = store
  }

  /** The processes the limits are divided among now (a function's answer below 1 or not whole counts as 1). */
  get processes(): number {
    const n = this.#processes()
    return Number.isSafeInteger(n) && n > 1 ? n : 1
  }

  consume(key: string, set: PolicySet, cost: number): Awaitable<readonly Outcome[]> {
    return this.#store.consume(key, this.#shareOf(set), cost)
  }

  peek(key: string, set: PolicySet): Awaitable<readonly Outcome[]> {
    return this.#store.peek(key, this.#shareOf(set))
  }

  reset(key: string, set: PolicySet): Awaitable<void> {
    return this.#store.reset(key, this.#shareOf(set))
  }

  #shareOf(set: PolicySet): PolicySet {
    const n = this.processes
    if (n === 1) return set
    let byProcesses = this.#shares.get(set)
    if (byProcesses === undefined) {
      byProcesses = new Map()
      this.#shares.set(set, byProcesses)
    }
    let share = byProcesses.get(n)
    if (share === undefined) {
      // The set keeps its id, so a key's counts carry over when the number of processes changes.
      share = policySetOf(
        set.policies.map((policy) => shareOf(policy, n)),
        set.id,
      )
      byProcesses.set(n, share)
    }
    return share
  }
}

function shareOf(policy: Policy, n: number): Policy {
  return {
    ...policy,
    limit: Math.max(1, Math.floor(policy.limit / n)),
    burst: Math.max(1, Math.floor(policy.burst / n)),
  }
}
