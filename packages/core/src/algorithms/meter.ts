import type { Policy } from '../policies/policy.js'
import type { Outcome } from './outcome.js'

/**
 * An algorithm run on a state that a store owns and changes in place (MemoryStore), with the
 * transition's decisions: `decide` answers without changing anything, and `take` then applies an
 * admitted cost. No state object per request, and each step is O(1) amortised (the sliding
 * window keeps a running total, the sliding log a head index), whatever the precision or limit.
 */
export interface Meter<M extends Kept> {
  /**
   * What the transition's outcome would be for this state (undefined: a new or expired key); with
   * `label` (the policy again), made as the Decision's entry for it (see `Labelled`).
   */
  decide(state: M | undefined, now: number, policy: Policy, cost: number, label?: Policy): Outcome
  /**
   * Applies `cost` that `decide` admitted at the same `now`: the state changed in place, or a new
   * one (expiry and protectedUntil 0). `spare`, with no live state: an expired state of the same
   * policy to write the new one into, so a key whose state expires between requests does not make
   * a new object each time (objects that have lived long are the costly garbage).
   */
  take(state: M | undefined, now: number, policy: Policy, cost: number, spare?: M): M
  /** The state as the pure functions (refund, penalize) read it, for `policy`; may be the same object. */
  toState(state: M, policy: Policy): unknown
  /** A state the pure functions returned, as this meter keeps it (expiry and protectedUntil 0). */
  fromState(state: unknown): M
}

/**
 * What every state a meter keeps carries for its store (MemoryStore), in the state object itself
 * (one load fewer per decision than a separate array, one object fewer per key than a holder):
 * when the state is back to full quota, in the store's time, and so reads as no state at all;
 * and until when it was used up (a denial, nothing remaining, a penalty or a block), so that the
 * store never evicts its key before then. A meter makes each state with both 0 and leaves them.
 */
export interface Kept {
  expiry: number
  protectedUntil: number
}
