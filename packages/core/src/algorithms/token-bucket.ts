import type { Policy } from '../policy.js'
import type { Kept, Meter } from './meter.js'
import { admitted, ceilMs, denied, type Mutable, type Outcome, type Refund, type Transition } from './outcome.js'

/**
 * Tokens scaled by the window (a token is `window` units and `limit` units drip in per ms), so
 * refills are whole numbers for whole-millisecond clocks and nothing drifts.
 */
export interface TokenBucketState {
  readonly tokens: number
  readonly updated: number
}

/**
 * Starts full at `burst` tokens and refills at limit/window. Admits while tokens ≥ cost; with
 * `maxDelay`, tokens may go negative by up to maxDelay's worth of refill, and the request waits
 * until its tokens would have arrived (a reservation, as Guava's acquire).
 */
export const tokenBucket: Transition<TokenBucketState> = (state, now, policy, cost) => {
  const outcome = decideTokenBucket(state, now, policy, cost)
  if (!outcome.allowed || (cost === 0 && state !== undefined)) return { state: state as TokenBucketState, outcome }
  return { state: { tokens: tokensAt(state, now, policy) - cost * policy.window, updated: now }, outcome }
}

/**
 * The bucket refilled to `now`, in scaled tokens. A bucket updated more than a window after now
 * comes from a clock that stepped back (or a glitch forward) and reads as full, so the step
 * costs no more than a window; within a window it refills from its update on.
 */
function tokensAt(state: TokenBucketState | undefined, now: number, { limit, window, burst }: Policy): number {
  const capacity = burst * window
  if (state === undefined || state.updated - now > window) return capacity
  return Math.min(capacity, state.tokens + Math.max(0, now - state.updated) * limit)
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
    if (state === undefined) return { tokens, updated: now, expiry: 0, next: undefined }
    state.tokens = tokens
    state.updated = now
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({
    tokens: (state as TokenBucketState).tokens,
    updated: (state as TokenBucketState).updated,
    expiry: 0,
    next: undefined,
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
  const tokens = Math.min(capacity, state.tokens + Math.max(0, now - state.updated) * limit)
  if (tokens === capacity) return state
  return { tokens: Math.min(capacity, tokens + cost * window), updated: now }
}
