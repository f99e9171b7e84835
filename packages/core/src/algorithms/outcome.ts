import type { Policy } from '../policy.js'

/** What one policy says about one request. Times are whole milliseconds from now. */
export interface Outcome {
  readonly allowed: boolean
  /** Units still available after this request (never negative). */
  readonly remaining: number
  /** Time until the policy is back to its full quota if nothing more arrives. */
  readonly resetAfter: number
  /** 0 when allowed; otherwise the time until the same request could succeed. */
  readonly retryAfter: number
  /** Shaping: the admitted request should wait this long before it proceeds. */
  readonly delay: number
}

/** A state type with its fields writable, for the copy functions beside each transition. */
export type Mutable<S> = { -readonly [K in keyof S]: S[K] }

/** The result of a transition: the state to store if the request is admitted, and the outcome. */
export interface Step<S> {
  readonly state: S
  readonly outcome: Outcome
}

/**
 * One algorithm: a pure function of the stored state (undefined for a new or expired key), the
 * clock, the policy and the request's cost. It never mutates its input; a denied step returns
 * the input state unchanged, so nothing needs writing.
 */
export type Transition<S> = (state: S | undefined, now: number, policy: Policy, cost: number) => Step<S>

/**
 * Gives back `cost` units that an admitted request took: a pure function like a transition. It
 * never creates a state (undefined stays undefined), never gives back more than a full quota,
 * never gives back into a window that has passed, and returns the input state itself when
 * nothing changes. A refund never lengthens the time until the state is back to full quota, so
 * a store may keep the expiry it already has.
 */
export type Refund<S> = (state: S | undefined, now: number, policy: Policy, cost: number) => S | undefined

/**
 * Float slack for the algorithms whose rates are fractions (1000 ms / 3): without it,
 * 333.33… × 3 can land a hair above 1000 and deny a request that fits exactly. The Lua
 * mirrors use the same constant.
 */
export const EPSILON = 1e-6

export function ceilMs(ms: number): number {
  return ms <= EPSILON ? 0 : Math.ceil(ms - EPSILON)
}

export function floorUnits(units: number): number {
  return units <= 0 ? 0 : Math.floor(units + EPSILON)
}

export function admitted(remaining: number, resetAfter: number, delay = 0): Outcome {
  return { allowed: true, remaining, resetAfter, retryAfter: 0, delay }
}

export function denied(remaining: number, resetAfter: number, retryAfter: number): Outcome {
  return { allowed: false, remaining, resetAfter, retryAfter: Math.max(retryAfter, 1), delay: 0 }
}
