/**
 * One algorithm's Lua, as fragments the scripts assemble (each script stays one body: Redis runs
 * it whole on every call, so the fragments are text put in place, not functions called). Each
 * module mirrors its file in packages/core/src/algorithms/ line for line (same formulas, same
 * order of float operations, same EPSILON, ceil and floor rules); test/parity holds them to it.
 *
 * A fragment runs with these in scope: `now` (epoch ms), `policies` (the policy records) and
 * `i` (the policy's record), its state as the stored string `state` (false when none; never false
 * in `refund`), the cost `c`, and the record's fields as locals: `limit`, `window`, `burst`,
 * `precision`, `maxDelay` (and `blockFor` in `decide`), `admitted` in `refund` (when the
 * refunded request was admitted, or nil). Each ends in a return:
 * - decide: allowed, remaining, resetAfter, retryAfter, delay; when admitted with c > 0 also the
 *   state to write and `keep` (see decide.ts).
 * - refund: the new state, or nil when nothing changes.
 * - penalize: the new state and how long until it drains (ms).
 */
export interface AlgorithmLua {
  /** The algorithm's code in a policy record (protocol.ts). */
  readonly code: number
  /** Local functions the fragments call, put once at the top of every script that uses them. */
  readonly functions: string
  /** Local functions only `decide` calls (after ceilMs and floorUnits, protocol.ts, which it may call). */
  readonly decideFunctions?: string
  readonly decide: string
  readonly refund: string
  readonly penalize: string
}

/** A bucket's Lua adds how SyncedStore's lease script reads its state and takes a grant from it. */
export interface BucketLua extends AlgorithmLua {
  /** Functions of the lease script only (reading the state as `decide` does). */
  readonly leaseFunctions: string
  /**
   * The lease of one operation: with `amount` units wanted (> 0) or given back (< 0) on `key`,
   * sets `granted` and the state after it (`a`, `b`; see lease.ts).
   */
  readonly lease: string
  /**
   * A reset on the lease script: `state` becomes a full bucket, written to last until every view
   * a node took before it reads full (a missing state would be rebuilt from those views).
   */
  readonly reset: string
}
