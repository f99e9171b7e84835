import type { Mutable } from './outcome.js'
import { admitted, ceilMs, denied, type Refund, type Transition } from './outcome.js'

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
  const { limit, window, burst, maxDelay } = policy
  const capacity = burst * window
  const elapsed = state === undefined ? 0 : Math.max(0, now - state.updated)
  const tokens = state === undefined ? capacity : Math.min(capacity, state.tokens + elapsed * limit)
  const next = tokens - cost * window
  const debtAllowed = maxDelay * limit

  if (next < -debtAllowed) {
    const waitForTokens = ceilMs((-next - debtAllowed) / limit)
    return {
      state: state as TokenBucketState,
      outcome: denied(Math.max(0, Math.floor(tokens / window)), ceilMs((capacity - tokens) / limit), waitForTokens),
    }
  }
  const outcome = admitted(
    Math.max(0, Math.floor(next / window)),
    ceilMs((capacity - next) / limit),
    next < 0 ? ceilMs(-next / limit) : 0,
  )
  return { state: cost === 0 && state !== undefined ? state : { tokens: next, updated: now }, outcome }
}

/** Refills to now as a consume would, then puts the tokens back, never above `burst`. */
export const refundTokenBucket: Refund<TokenBucketState> = (state, now, policy, cost) => {
  if (state === undefined) return state
  const { limit, window, burst } = policy
  const capacity = burst * window
  const tokens = Math.min(capacity, state.tokens + Math.max(0, now - state.updated) * limit)
  if (tokens === capacity) return state
  return { tokens: Math.min(capacity, tokens + cost * window), updated: now }
}

/** Overwrites a stored state with a newer one of the same policy, for stores that keep state objects. */
export function copyTokenBucket(into: Mutable<TokenBucketState>, from: TokenBucketState): void {
  into.tokens = from.tokens
  into.updated = from.updated
}
