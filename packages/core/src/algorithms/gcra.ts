import type { Policy } from '../policies/policy.js'
import type { Kept, Meter } from './meter.js'
import {
  admitted,
  ceilMs,
  denied,
  EPSILON,
  floorUnits,
  type Mutable,
  type Outcome,
  type Penalty,
  type Refund,
  type Transition,
} from './outcome.js'
import { coldCost, cooled, decideWarm, maxColdOf } from './warm-up.js'

/** The theoretical arrival time: when the key's schedule would be back to empty. */
export interface GcraState {
  readonly tat: number
  /**
   * The limit the TAT was scheduled at (T = window/limit per unit). A named policy's limit may
   * change under its state (a plan change): the backlog is then read at the new T so that the
   * units used stay used (see `backlogOf`). Absent in states written before it was kept.
   */
  readonly limit?: number
  /** A warming schedule's coldness when written (see warm-up.ts); absent without `warmup`. */
  readonly cold?: number
}

/**
 * The generic cell rate algorithm (the leaky bucket as a meter, as nginx's limit_req): each
 * unit of cost pushes the TAT on by T = window/limit; a request is admitted while the pushed TAT
 * stays within τ = T·burst of now. With `maxDelay` the request may push it up to maxDelay
 * further and is told to wait until its slot — nginx's `burst` without `nodelay`.
 */
export const gcra: Transition<GcraState> = (state, now, policy, cost) => {
  const warm = policy.warmup > 0
  const outcome = (warm ? decideWarmGcra : decideGcra)(state, now, policy, cost)
  if (!outcome.allowed || (cost === 0 && state !== undefined)) return { state: state as GcraState, outcome }
  if (warm) return { state: takeWarmGcra(state, now, policy, cost, { tat: 0 }), outcome }
  return { state: { tat: tatAfter(state, now, policy, cost), limit: policy.limit }, outcome }
}

/** The TAT after admitting `cost`. */
function tatAfter(state: GcraState | undefined, now: number, policy: Policy, cost: number): number {
  return now + (backlogOf(state, now, policy) + (policy.window / policy.limit) * cost)
}

/**
 * How far the TAT lies after now. An admission leaves at most tolerance + maxDelay and a penalty
 * a window more (see penalizeGcra); a TAT further on (by a millisecond, above float error) comes
 * from a clock that stepped back, or a glitch forward, and reads as none: such a step costs at
 * most about a window.
 */
function backlogOf(state: GcraState | undefined, now: number, policy: Policy): number {
  if (state === undefined) return 0
  const { limit, window, burst, maxDelay } = policy
  const backlog = storedBacklog(state, now, policy)
  return backlog > (window / limit) * burst + maxDelay + window + 1 ? 0 : Math.max(0, backlog)
}

/**
 * How far the TAT lies after now, read at the policy's T: a TAT scheduled at another limit (its
 * named policy's plan changed) keeps its units, so an upgrade from 100 to 1000 after 100 used
 * leaves 900; a downgrade leaves none, never a backlog beyond tolerance + maxDelay it did not have.
 */
export function storedBacklog(state: GcraState, now: number, { limit, window, burst, maxDelay }: Policy): number {
  const backlog = state.tat - now
  if (state.limit === undefined || state.limit === limit || backlog <= 0) return backlog
  const scaled = (backlog * state.limit) / limit
  return Math.min(scaled, Math.max(backlog, (window / limit) * burst + maxDelay))
}

/** GCRA's outcome (see `gcra`), changing nothing. */
function decideGcra(state: GcraState | undefined, now: number, policy: Policy, cost: number, label?: Policy): Outcome {
  const { limit, window, burst, maxDelay } = policy
  const interval = window / limit
  const tolerance = interval * burst
  const backlog = backlogOf(state, now, policy)
  const nextBacklog = backlog + interval * cost

  if (nextBacklog > tolerance + maxDelay + EPSILON) {
    return denied(
      floorUnits((tolerance - backlog) / interval),
      ceilMs(backlog),
      ceilMs(nextBacklog - tolerance - maxDelay),
      label,
    )
  }
  const remaining = floorUnits((tolerance - nextBacklog) / interval)
  return admitted(
    remaining,
    ceilMs(nextBacklog),
    ceilMs(nextBacklog - tolerance),
    remaining === 0 ? Math.max(1, ceilMs(nextBacklog + interval - tolerance)) : undefined,
    label,
  )
}

/** GCRA on a state kept and changed in place (see `Meter`). */
export const gcraMeter: Meter<Mutable<GcraState> & Kept> = {
  decide: decideGcra,
  take(live, now, policy, cost, spare) {
    const tat = tatAfter(live, now, policy, cost)
    const state = live ?? spare
    if (state === undefined) return { tat, limit: policy.limit, expiry: 0, protectedUntil: 0 }
    state.tat = tat
    state.limit = policy.limit
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({
    tat: (state as GcraState).tat,
    limit: (state as GcraState).limit,
    expiry: 0,
    protectedUntil: 0,
  }),
}

/**
 * A warming schedule's backlog, read as `backlogOf` does but to a horizon coldFactor times as far
 * (a cold request that finds the schedule empty may push the TAT that far: warm-up.ts); further
 * on, or no state: undefined, a new key's (empty, cold).
 */
function warmBacklogOf(state: GcraState | undefined, now: number, policy: Policy): number | undefined {
  if (state === undefined) return undefined
  const { limit, window, burst, maxDelay, coldFactor } = policy
  const backlog = storedBacklog(state, now, policy)
  return backlog > coldFactor * ((window / limit) * burst + maxDelay) + window + 1 ? undefined : Math.max(0, backlog)
}

/** A warming schedule's coldness at now: it cools from when its TAT passed. */
function gcraCold(state: GcraState, now: number, policy: Policy): number {
  return cooled(Math.min(state.cold ?? 0, maxColdOf(policy)), now - state.tat, policy)
}

/** GCRA with `warmup` (see warm-up.ts): its backlog and coldness at now, decided there. */
function decideWarmGcra(
  state: GcraState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  label?: Policy,
): Outcome {
  const backlog = warmBacklogOf(state, now, policy)
  if (backlog === undefined) return decideWarm(0, maxColdOf(policy), policy, cost, label)
  return decideWarm(backlog, gcraCold(state as GcraState, now, policy), policy, cost, label)
}

/** Writes into `into` the warming schedule after `cost` is taken at its cold cost; returns `into`. */
function takeWarmGcra<S extends Mutable<GcraState>>(
  state: GcraState | undefined,
  now: number,
  policy: Policy,
  cost: number,
  into: S,
): S {
  const backlog = warmBacklogOf(state, now, policy)
  const cold = backlog === undefined ? maxColdOf(policy) : gcraCold(state as GcraState, now, policy)
  into.tat = now + ((backlog ?? 0) + coldCost(cold, cost, policy))
  into.limit = policy.limit
  into.cold = cold - Math.min(cost, cold)
  return into
}

/** GCRA with `warmup` (see warm-up.ts), on a state kept and changed in place: never on a plain policy's path. */
export const warmGcraMeter: Meter<Mutable<GcraState> & Kept> = {
  decide: decideWarmGcra,
  take: (live, now, policy, cost, spare) =>
    takeWarmGcra(live, now, policy, cost, live ?? spare ?? { tat: 0, expiry: 0, protectedUntil: 0 }),
  toState: (state) => state,
  fromState: (state) => ({ ...(state as GcraState), expiry: 0, protectedUntil: 0 }),
}

/**
 * `gcraMeter` for a policy without a name: its limit is part of its id, so it never changes under
 * its state, and the state keeps none (`storedBacklog` reads the policy's). A plain policy pays
 * nothing for plan changes.
 */
export const plainGcraMeter: Meter<Mutable<GcraState> & Kept> = {
  decide: decideGcra,
  take(live, now, policy, cost, spare) {
    const tat = tatAfter(live, now, policy, cost)
    const state = live ?? spare
    if (state === undefined) return { tat, expiry: 0, protectedUntil: 0 }
    state.tat = tat
    return state
  },
  toState: (state) => state,
  fromState: (state) => ({ tat: (state as GcraState).tat, expiry: 0, protectedUntil: 0 }),
}

/**
 * Moves the TAT back by T per unit, never before now (a schedule already empty has nothing to
 * give). A schedule has no windows, so `admittedAt` changes nothing.
 */
export const refundGcra: Refund<GcraState> = (state, now, policy, cost) => {
  if (state === undefined || state.tat <= now) return state
  const tat =
    state.limit === undefined || state.limit === policy.limit ? state.tat : now + storedBacklog(state, now, policy)
  const refunded = Math.max(now, tat - (policy.window / policy.limit) * cost)
  // A TAT still ahead of now has not passed since it was written: a warming schedule's coldness stands.
  if (policy.warmup > 0) return { tat: refunded, limit: policy.limit, cold: state.cold }
  return { tat: refunded, limit: policy.limit }
}

/**
 * The TAT goes on by T per unit, up to a window beyond tolerance + maxDelay: the furthest a TAT
 * is read as one (see gcra), so a penalty keeps a key denied for at most about a window more.
 */
export const penalizeGcra: Penalty<GcraState> = (state, now, policy, cost) => {
  if (policy.warmup > 0) return penalizeWarmGcra(state, now, policy, cost)
  const { limit, window, burst, maxDelay } = policy
  const interval = window / limit
  const backlog = state === undefined ? 0 : Math.max(0, storedBacklog(state, now, policy))
  return { tat: now + Math.min(backlog + interval * cost, interval * burst + maxDelay + window), limit }
}

/** `penalizeGcra` for a warming schedule: the units at their cold cost, to the same furthest TAT. */
function penalizeWarmGcra(state: GcraState | undefined, now: number, policy: Policy, cost: number): GcraState {
  const { limit, window, burst, maxDelay } = policy
  const backlog = warmBacklogOf(state, now, policy)
  const cold = backlog === undefined ? maxColdOf(policy) : gcraCold(state as GcraState, now, policy)
  // A cold request's pay-later may have left the TAT beyond that already: a penalty never brings it back.
  const before = backlog ?? 0
  const tat =
    now +
    Math.max(before, Math.min(before + coldCost(cold, cost, policy), (window / limit) * burst + maxDelay + window))
  return { tat, limit, cold: cold - Math.min(cost, cold) }
}
