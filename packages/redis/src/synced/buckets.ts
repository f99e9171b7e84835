import type { MemoryStore, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { RedisStore } from '../store.js'
import { EXACT_TIMEOUT_MS } from './exact.js'
import { withTimeout } from './timeout.js'

/**
 * Token bucket and GCRA: exact through `RedisStore`, waiting at most EXACT_TIMEOUT_MS. While the
 * node is degraded, or when that call fails, the key is decided in memory on this node's share
 * of each limit and burst; those decisions are not sent to Redis later (a bucket's refill makes
 * them a function of time, not a total a sync could carry).
 */
export class BucketPath {
  constructor(
    readonly exact: RedisStore,
    /** Token bucket and GCRA on this node's share while Redis does not answer. */
    readonly alone: MemoryStore,
    /** Whether Redis is out of reach now, and this node's share of a set. */
    readonly fleet: { degraded(): boolean; shareOf(set: PolicySet): PolicySet },
  ) {}

  /** The one way a bucket decision goes: every SyncedStore decision on a bucket policy set comes here. */
  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    if (this.fleet.degraded()) return this.alone.consume(key, this.fleet.shareOf(set), cost)
    return withTimeout(Promise.resolve(this.exact.consume(key, set, cost)), EXACT_TIMEOUT_MS).catch(() =>
      this.alone.consume(key, this.fleet.shareOf(set), cost),
    )
  }

  peek(key: string, set: PolicySet): readonly Outcome[] | Promise<readonly Outcome[]> {
    return this.fleet.degraded() ? this.alone.peek(key, this.fleet.shareOf(set)) : this.exact.peek(key, set)
  }

  refund(key: string, set: PolicySet, cost: number, admittedAt?: number): undefined | Promise<void> {
    if (!this.fleet.degraded()) return this.exact.refund(key, set, cost, admittedAt)
    this.alone.refund(key, this.fleet.shareOf(set), cost, admittedAt)
    return undefined
  }

  reset(key: string, set: PolicySet): Promise<void> {
    return this.exact.reset(key, set)
  }
}
