import type { Policy } from '../policies/policy.js'
import type { Kept, Meter } from './meter.js'
import {
  admitted,
  ceilMs,
  denied,
  type Mutable,
  type Outcome,
  type Penalty,
  type Refund,
  type Transition,
} from './outcome.js'
import { coldCost, cooled, decideWarm, maxColdOf } from './warm-up.js'

/**
 * Tokens scaled by the window (a token is `window` units and `limit` units drip in per ms), so
 * refills are whole numbers for whole-millisecond clocks and nothing drifts.
 */
export interface TokenBucketState {
  readonly tokens: number
  readonly updated: number
  /**
   * The burst the tokens were counted against. A named policy's limit may change under its state
   * (a plan change): the tokens are then read against the new burst so that the units used stay
   * used (see `storedTokens`). Absent in states written before it was kept: the policy's burst.
   */
  readonly burst?: number
  /**
   * The rate (units per window) the bucket refills at until a request under another plan writes
   * it: the old plan is in force until then (see `storedTokens`). Absent in states written before
   * it was kept: the policy's limit.
   */
  readonly limit?: number
  /** A warming bucket's coldness when written (see warm-up.ts); absent without `warmup`. */
  readonly cold?: number
}

/**
 * Starts full at `burst` tokens and refills at limit/window. Admits while tokens ≥ cost; with
 * `maxDelay`, tokens may go negative by up to maxDelay's worth of refill, and the request waits
 * until its tokens would have arrived (a reservation, as Guava's acquire).
 */
export const tokenBucket: Transition<TokenBucketState> = (state, now, policy, cost) => {
  const warm = policy.warmup > 0
  const outcome = (warm ? decideWarmBucket : decideTokenBucket)(state, now, policy, cost)
  if (!outcome.allowed || (cost === 0 && state !== undefined)) return { state: state as TokenBucketState, outcome }
  if (warm) return { state: takeWarmBucket(state, now, policy, cost, { tokens: 0, updated: now }), outcome }
  return {
    state: {
      tokens: tokensAt(state, now, policy) - cost * policy.window,
      updated: now,
      burst: policy.burst,
      limit: policy.limit,
    },
    outcome,
  }
}

/**
 * The stored bucket refilled to `now` and read against the policy's burst, in scaled tokens. The
 * plan a bucket was written under stays in force until a request under another plan arrives (as
 * GCRA's `storedBacklog`), so the bucket refills at its stored rate up to its stored burst; then
 * the units used stay used: an upgrade from 100 to 1000 after 100 used leaves 900, a downgrade
 * leaves none, never a debt deeper than the bucket had. A bucket full by the old plan reads full
 * on any plan, as it does in a store that forgot it at the old plan's reset time.
 */
export function storedTokens(state: TokenBucketState, now: number, { limit, window, burst }: Policy): number {
  const writtenBurst = state.burst ?? burst
  const refilled = Math.min(
    writtenBurst * window,
    state.tokens + Math.max(0, now - state.updated) * (state.limit ?? limit),
  )
  if (writtenBurst === burst) return refilled
  const used = writtenBurst * window - refilled
  return Math.max(burst * window - used, Math.min(0, refilled))
}

/**
 * The bucket refilled to `now`, in scaled tokens. A bucket updated more than a window after now
 * comes from a clock that stepped back (or a glitch forward) and reads as full, so the step
 * costs no more than a window; within a window it refills from its update on.
 */
function tokensAt(state: TokenBucketState | undefined, now: number, policy: Policy): number {
  if (state === undefined || state.updated - now > policy.window) return policy.burst * policy.window
  return storedTokens(state, now, policy)
}

/** The token bucket's outcome (see `tokenBucket`), changing nothing. */
function decideTokenBucket(
  state: TokenBucketState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  const { limit, window, burst, maxDelay } = policy
  const capacity = burst * window
  const tokens = tokensAt(state, now, policy)
  const next = tokens - cost * window
  const debtAllowed = maxDelay * limit

  if (next < -debtAllowed) {
    const waitForTokens = ceilMs((-next - debtAllowed) / limit)
    return denied(Math.max(0, Math.floor(tokens / window)), ceilMs((capacity - tokens) / limit), waitForTokens, label)
  }
  const remaining = Math.max(0, Math.floor(next / window))
  return admitted(
    remaining,
    ceilMs((capacity - next) / limit),
    next < 0 ? ceilMs(-next / limit) : 0,
    remaining === 0 ? Math.max(1, ceilMs((window - next) / limit)) : undefined,
    label,
  )
}

/** The token bucket on a state kept and changed in place (see `Meter`). */
export const tokenBucketMeter: Meter<Mutable<TokenBucketState> & Kept> = {
  decide: decideTokenBucket,
  take(live, now, policy, cost, spare) {
    const tokens = tokensAt(live, now, policy) - cost * policy.window
    const state = live ?? spare
    if (state === undefined) {
      return { tokens, updated: now, burst: policy.burst, limit: policy.limit, expiry: 0, protectedUntil: 0 }
    }
    state.tokens = tokens
    state.updated = now
    state.burst = policy.burst
    state.limit = policy.limit
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({
    tokens: (state as TokenBucketState).tokens,
    updated: (state as TokenBucketState).updated,
    burst: (state as TokenBucketState).burst,
    limit: (state as TokenBucketState).limit,
    expiry: 0,
    protectedUntil: 0,
  }),
}

/**
 * A warming bucket (`warmup`; warm-up.ts) read as a backlog, the refill it lacks in ms, and its
 * coldness at now. A bucket updated more than a window after now reads as a new one (full, cold).
 */
function decideWarmBucket(
  state: TokenBucketState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  if (state === undefined || state.updated - now > policy.window) {
    return decideWarm(0, maxColdOf(policy), policy, cost, label)
  }
  const tokens = storedTokens(state, now, policy)
  return decideWarm(
    (policy.burst * policy.window - tokens) / policy.limit,
    bucketCold(state, now, policy),
    policy,
    cost,
    label,
  )
}

/** A warming bucket's coldness at now: it cools from when it was full, refilled at the rate it was written at. */
function bucketCold(state: TokenBucketState, now: number, policy: Policy): number {
  const writtenCapacity = (state.burst ?? policy.burst) * policy.window
  const fullAt = state.updated + (writtenCapacity - state.tokens) / (state.limit ?? policy.limit)
  return cooled(Math.min(state.cold ?? 0, maxColdOf(policy)), now - fullAt, policy)
}

/** Writes into `into` the warming bucket after `cost` is taken at its cold cost; returns `into`. */
function takeWarmBucket<S extends Mutable<TokenBucketState>>(
  state: TokenBucketState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  into: S,
): S {
  const fresh = state === undefined || state.updated - now > policy.window
  const tokens = fresh ? policy.burst * policy.window : storedTokens(state, now, policy)
  const cold = fresh ? maxColdOf(policy) : bucketCold(state, now, policy)
  into.tokens = tokens - coldCost(cold, cost, policy) * policy.limit
  into.updated = now
  into.burst = policy.burst
  into.limit = policy.limit
  into.cold = cold - Math.min(cost, cold)
  return into
}

/** The token bucket with `warmup` (see warm-up.ts), on a state kept and changed in place: never on a plain policy's path. */
export const warmTokenBucketMeter: Meter<Mutable<TokenBucketState> & Kept> = {
  decide: decideWarmBucket,
  take: (live, now, policy, cost, spare) =>
    takeWarmBucket(live, now, policy, cost, live ?? spare ?? { tokens: 0, updated: now, expiry: 0, protectedUntil: 0 }),
  toState: (state) => state,
  fromState: (state) => ({ ...(state as TokenBucketState), expiry: 0, protectedUntil: 0 }),
}

/**
 * `tokenBucketMeter` for a policy without a name: its limit and burst are part of its id, so they
 * never change under its state, and the bucket keeps no plan (`storedTokens` reads the policy's).
 * A plain policy pays nothing for plan changes: two fields fewer to write per decision and to hold
 * per key.
 */
export const plainTokenBucketMeter: Meter<Mutable<TokenBucketState> & Kept> = {
  decide: decideTokenBucket,
  take(live, now, policy, cost, spare) {
    const tokens = tokensAt(live, now, policy) - cost * policy.window
    const state = live ?? spare
    if (state === undefined) return { tokens, updated: now, expiry: 0, protectedUntil: 0 }
    state.tokens = tokens
    state.updated = now
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({
    tokens: (state as TokenBucketState).tokens,
    updated: (state as TokenBucketState).updated,
    expiry: 0,
    protectedUntil: 0,
  }),
}

/**
 * Refills to now as a consume would, then puts the tokens back, never above `burst`. A bucket has
 * no windows, so `admittedAt` changes nothing: the cap at a full bucket is what bounds a late refund.
 */
export const refundTokenBucket: Refund<TokenBucketState> = (state, now, policy, cost) => {
  if (state === undefined) return state
  const { limit, window, burst } = policy
  const capacity = burst * window
  const tokens = storedTokens(state, now, policy)
  if (tokens === capacity) return state
  const refunded = Math.min(capacity, tokens + cost * window)
  // A bucket not full at now has not been full since its update: its coldness stands.
  if (policy.warmup > 0) return { tokens: refunded, updated: now, burst, limit, cold: state.cold }
  return { tokens: refunded, updated: now, burst, limit }
}

/**
 * The tokens go below zero as far as the cost takes them (see `Penalty`); a warming bucket's at
 * their cold cost, as a consume would write.
 */
export const penalizeTokenBucket: Penalty<TokenBucketState> = (state, now, policy, cost) => {
  if (policy.warmup > 0) return takeWarmBucket(state, now, policy, cost, { tokens: 0, updated: now })
  const { limit, window, burst } = policy
  const capacity = burst * window
  const tokens = state === undefined ? capacity : storedTokens(state, now, policy)
  return { tokens: tokens - cost * window, updated: now, burst, limit }
}
