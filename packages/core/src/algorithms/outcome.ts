import type { Policy } from '../policies/policy.js'

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
  /**
   * Admitted with nothing remaining: the time until one more unit is available, what a denial a
   * moment later would give as its retryAfter (the RateLimit header's `t` then). Else undefined.
   */
  readonly nextAfter?: number | undefined
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
 *
 * `admittedAt`, when known, is when the refunded request was admitted (same clock as `now`): a
 * windowed algorithm then gives back only into the (sub-)window that request counted in, and
 * nothing once that has passed, so a slow request's refund never erases a later request's count.
 */
export type Refund<S> = (
  state: S | undefined,
  now: number,
  policy: Policy,
  cost: number,
  admittedAt?: number,
) => S | undefined

/**
 * Takes `cost` units whatever the limit says (rate-limiter-flexible's `penalty`): the state a
 * consume of `cost` would write, as if it had been admitted. The count may go past the limit;
 * the key is then denied until enough of it has drained, as each algorithm drains.
 */
export type Penalty<S> = (state: S | undefined, now: number, policy: Policy, cost: number) => S

/**
 * Float slack for the algorithms whose rates are fractions (1000 ms / 3): without it,
 * 333.33… × 3 can land a hair above 1000 and deny a request that fits exactly. The Lua
 * mirrors use the same constant.
 */
export const EPSILON = 1e-6

/**
 * Float slack of the sliding window's weighted estimate (a sub-window's count times the share of
 * it still inside), tighter than EPSILON: the estimate is a sum of fractions of whole counts.
 */
export const ESTIMATE_EPSILON = 1e-9

/** Milliseconds rounded up, forgiving `EPSILON` of float error (0 stays 0). */
export function ceilMs(ms: number): number {
  return ms <= EPSILON ? 0 : Math.ceil(ms - EPSILON)
}

/** Units rounded down, forgiving `EPSILON` of float error (never negative). */
export function floorUnits(units: number): number {
  return units <= 0 ? 0 : Math.floor(units + EPSILON)
}

/**
 * The start of the span of `size` ms, aligned to multiples of it since the epoch, that holds
 * `now`: `known` (a state's start, itself aligned) while `now` is still inside that span, else
 * worked out. Saves a float modulo, a library call, on most decisions.
 */
export function alignedStart(now: number, size: number, known: number | undefined): number {
  return known !== undefined && now >= known && now - known < size ? known : now - (now % size)
}

/**
 * An outcome, with a `label` made as the Decision's entry for that policy (see `Labelled`); the
 * labels go first so that every entry has one shape, whoever made it.
 */
export function admitted(
  remaining: number,
  resetAfter: number,
  delay = 0,
  nextAfter?: number,
  label?: Policy,
): Outcome {
  return label === undefined
    ? { allowed: true, remaining, resetAfter, retryAfter: 0, delay, nextAfter }
    : labelled(label, true, remaining, resetAfter, 0, delay, nextAfter)
}

export function denied(remaining: number, resetAfter: number, retryAfter: number, label?: Policy): Outcome {
  const wait = Math.max(retryAfter, 1)
  return label === undefined
    ? { allowed: false, remaining, resetAfter, retryAfter: wait, delay: 0 }
    : labelled(label, false, remaining, resetAfter, wait, 0, undefined)
}

/**
 * An outcome that names its policy: the fields of a Decision's entry for it (`PolicyDecision`).
 * A meter asked for labelled outcomes makes them so, and the limiter uses them as the entries
 * as they are, with no copy per policy (see `MemoryStore`'s `consumeEntries`).
 */
export interface Labelled extends Outcome {
  readonly name: string
  readonly algorithm: Policy['algorithm']
  readonly limit: number
  readonly window: number
}

/** The one place a Decision's entry is made (here or by `toDecision`): one shape, fields in this order. */
export function labelled(
  policy: Policy,
  allowed: boolean,
  remaining: number,
  resetAfter: number,
  retryAfter: number,
  delay: number,
  nextAfter: number | undefined,
): Labelled {
  return {
    name: policy.name,
    algorithm: policy.algorithm,
    limit: policy.limit,
    window: policy.window,
    allowed,
    remaining,
    resetAfter,
    retryAfter,
    delay,
    nextAfter,
  }
}

/**
 * What a peek reports from a cost-0 outcome (`current`) and a cost-1 one (`next`): the quota left
 * without taking any, and whether, or when, a request of cost 1 would pass.
 */
export function peekOf(current: Outcome, next: Outcome): Outcome {
  return {
    allowed: next.allowed,
    remaining: current.remaining,
    resetAfter: current.resetAfter,
    retryAfter: next.retryAfter,
    delay: 0,
    nextAfter: next.allowed ? current.nextAfter : undefined,
  }
}
