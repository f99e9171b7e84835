import type { Policy } from '@sluice/core'
import { isNamed, type Outcome } from '@sluice/core/store'

interface Entry {
  /** Local clock when Redis denied the request. */
  readonly at: number
  /** When the denied request could first succeed. */
  readonly until: number
  readonly cost: number
  readonly outcomes: readonly Outcome[]
  /** The policies denied: a named policy's limit may change under its id (a plan change). */
  readonly policies: readonly Policy[]
}

/**
 * Remembers denials until their retryAfter (or less, see `set`), so a flood from one limited
 * client is answered in this process and never reaches Redis. A request of the same cost gets the
 * same answer with its times moved on.
 * Bounded: the oldest entry goes first when full.
 */
export class DeniedCache {
  readonly #entries = new Map<string, Entry>()
  readonly #maxKeys: number
  #epoch = 0

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys
  }

  get size(): number {
    return this.#entries.size
  }

  get(id: string, cost: number, now: number, policies: readonly Policy[]): readonly Outcome[] | undefined {
    const entry = this.#entries.get(id)
    if (entry === undefined) return undefined
    // A clock read before the denial's own (the decision clock was corrected back) ends it too:
    // its span was measured on the clock as it stood, so Redis decides again.
    if (now >= entry.until || now < entry.at) {
      this.#entries.delete(id)
      return undefined
    }
    // A costlier request would wait longer, a cheaper one might pass: only the same cost gets the same answer.
    if (cost !== entry.cost) return undefined
    // Another plan of the same named policies reads the same state against other limits: Redis decides.
    if (!samePlan(entry.policies, policies)) return undefined
    // The monotonic clock reads fractions of a millisecond; times stay whole ms, rounded up so a
    // retry at retryAfter is never early.
    const elapsed = now - entry.at
    return entry.outcomes.map((o) => ({
      allowed: o.allowed,
      remaining: o.remaining,
      resetAfter: Math.max(0, Math.ceil(o.resetAfter - elapsed)),
      retryAfter: o.allowed ? 0 : Math.max(1, Math.ceil(o.retryAfter - elapsed)),
      delay: 0,
    }))
  }

  /**
   * Records a denial (at least one outcome not allowed), for as long as Redis would give the same
   * answer with its times moved on, policy by policy: a denying policy's outcome holds until its
   * own retryAfter, an admitting fixed window's until the window turns. The other algorithms'
   * counts move with time (a bucket refills, a sliding window's old part fades), so a denial that
   * leaves one of them admitting, or that one of them makes for a request of cost above 1 (its
   * remaining can pass 0 before the retry time), is not remembered; nor is one in a set with a
   * `blockFor` policy or a named GCRA or token bucket (see below). A remembered denial answers only requests on the
   * same plan: another plan of the same named policies reads the state against other limits.
   */
  set(
    id: string,
    cost: number,
    now: number,
    outcomes: readonly Outcome[],
    policies: readonly Policy[],
    askedIn: number,
  ): void {
    if (askedIn !== this.#epoch) return
    let valid = Number.POSITIVE_INFINITY
    for (const [i, o] of outcomes.entries()) {
      // A denial under blockFor starts a block that later denials report instead of their own wait.
      if ((policies[i]?.blockFor ?? 0) > 0) valid = 0
      // A named GCRA's TAT or token bucket may be on another plan's limit (a denial writes nothing, so
      // the old plan stays in force): it drains or refills at that rate, not the retryAfter's.
      const algorithm = policies[i]?.algorithm
      if ((algorithm === 'gcra' || algorithm === 'token-bucket') && isNamed(policies[i] as Policy)) valid = 0
      const fixed = policies[i]?.algorithm === 'fixed-window'
      const holds = !o.allowed ? (fixed || cost === 1 ? o.retryAfter : 0) : fixed ? o.resetAfter : 0
      if (holds < valid) valid = holds
    }
    this.#entries.delete(id)
    if (valid <= 0) return
    if (this.#entries.size >= this.#maxKeys) {
      const oldest = this.#entries.keys().next()
      if (!oldest.done) this.#entries.delete(oldest.value)
    }
    this.#entries.set(id, { at: now, until: now + valid, cost, outcomes, policies })
  }

  /** Drops an entry an admitted request has made stale. */
  delete(id: string): void {
    this.#entries.delete(id)
  }

  /**
   * Counted from every `invalidate`: a denial asked for in an earlier epoch is not remembered,
   * since a refund, reset, penalty or block sent after it may have changed what Redis would say
   * (its reply can be read before the denial's is handled).
   */
  get epoch(): number {
    return this.#epoch
  }

  /** Drops the entry before a refund, reset, penalty or block is sent, and starts a new epoch. */
  invalidate(id: string): void {
    this.#entries.delete(id)
    this.#epoch++
  }
}

/** Whether two sets of the same id decide alike: the same policies, or named ones on the same plan. */
function samePlan(a: readonly Policy[], b: readonly Policy[]): boolean {
  if (a === b) return true
  return a.every((policy, i) => {
    const other = b[i]
    return (
      other !== undefined &&
      policy.limit === other.limit &&
      policy.burst === other.burst &&
      policy.maxDelay === other.maxDelay
    )
  })
}
