import type { AlgorithmName, MemoryStore, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { ScriptClient } from '../client.js'
import type { RedisStore } from '../redis-store.js'
import { EXACT_TIMEOUT_MS } from './exact.js'
import type { LeaseSizing } from './lease.js'
import { Leases } from './leases.js'
import { withTimeout } from './timeout.js'

/** The algorithms this path decides: a bucket's state is a function of time, not a count a sync could carry. */
export const BUCKETS: readonly AlgorithmName[] = Object.freeze(['token-bucket', 'gcra'])

/** What leasing needs beyond the bucket path's own stores (absent: `lease: false`). */
export interface LeaseConfig {
  readonly client: ScriptClient
  readonly interval: number
  readonly maxKeys: number
  readonly now: (() => number) | undefined
  readonly sizing: LeaseSizing
  /** This node's part of the fleet (`weight`, else 1 ÷ live nodes). */
  readonly part: () => number
}

/**
 * Token bucket and GCRA: from a leased grant (see `Leases`) when every policy of the set can be
 * leased, else exact through `RedisStore`, waiting at most EXACT_TIMEOUT_MS. While the node is
 * degraded, or when a call fails, a leased key is decided from what this node holds, then on its
 * share of what the bucket held at the last reply, and what it admits so is charged to Redis's
 * state once Redis answers (`Lease.spendAlone`); a state Redis forgot is rebuilt from the nodes'
 * views (LEASE_LUA). A key not leased is decided in memory on this node's share of each limit
 * and burst from a full bucket, and not charged later. A named policy keeps its state across a plan change on
 * every path: Redis's state records its burst or limit (leases included, see LEASE_LUA and
 * `Leases`), and the share's policies keep their ids, so the MemoryStore converts its state too.
 */
export class BucketPath {
  readonly #leases: Leases | undefined

  constructor(
    readonly exact: RedisStore,
    /** Token bucket and GCRA on this node's share while Redis does not answer. */
    readonly alone: MemoryStore,
    /** Whether Redis is out of reach now, and this node's share of a set. */
    readonly fleet: { degraded(): boolean; shareOf(set: PolicySet): PolicySet },
    lease: LeaseConfig | undefined,
  ) {
    this.#leases =
      lease === undefined
        ? undefined
        : new Leases({
            ...lease,
            redis: exact,
            timeout: EXACT_TIMEOUT_MS,
            exactly: (key, set, cost) => this.#exactly(key, set, cost),
            share: (set) => this.fleet.shareOf(set),
          })
  }

  /** The one way a bucket decision goes: every SyncedStore decision on a bucket policy set comes here. */
  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    if (this.fleet.degraded()) {
      return this.#leases?.alone(key, set, cost) ?? this.alone.consume(key, this.fleet.shareOf(set), cost)
    }
    if (this.#leases?.serves(set)) return this.#leases.consume(key, set, cost)
    return this.#exactly(key, set, cost)
  }

  peek(key: string, set: PolicySet): readonly Outcome[] | Promise<readonly Outcome[]> {
    return this.fleet.degraded() ? this.alone.peek(key, this.fleet.shareOf(set)) : this.exact.peek(key, set)
  }

  refund(key: string, set: PolicySet, cost: number, admittedAt?: number): undefined | Promise<void> {
    if (!this.fleet.degraded()) return this.exact.refund(key, set, cost, admittedAt)
    this.alone.refund(key, this.fleet.shareOf(set), cost, admittedAt)
    return undefined
  }

  /** Redis's state starts again, and this node's grant of it with it (a leased one written full, see `Leases.reset`). */
  async reset(key: string, set: PolicySet): Promise<void> {
    await this.exact.reset(key, set)
    if (this.#leases?.serves(set)) await this.#leases.reset(key, set)
  }

  /** One lease sync now (after any in flight); never rejects. */
  async sync(): Promise<void> {
    await this.#leases?.sync()
  }

  /** Stops the lease syncs and gives back everything held (one attempt). */
  async close(): Promise<void> {
    await this.#leases?.close()
  }

  /** Keys whose leased units a close has not given back. */
  get unreturned(): number {
    return this.#leases?.unreturned ?? 0
  }

  /** One RedisStore decision, waiting at most EXACT_TIMEOUT_MS, then on this node's share. */
  #exactly(key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    return withTimeout(Promise.resolve(this.exact.consume(key, set, cost)), EXACT_TIMEOUT_MS).catch(() =>
      this.alone.consume(key, this.fleet.shareOf(set), cost),
    )
  }
}
