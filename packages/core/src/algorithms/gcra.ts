import type { Mutable } from './outcome.js'
import { admitted, ceilMs, denied, EPSILON, floorUnits, type Refund, type Transition } from './outcome.js'

/** The theoretical arrival time: when the key's schedule would be back to empty. */
export interface GcraState {
  readonly tat: number
}

/**
 * The generic cell rate algorithm (the leaky bucket as a meter, as nginx's limit_req): each
 * unit of cost pushes the TAT on by T = window/limit; a request is admitted while the pushed TAT
 * stays within τ = T·burst of now. With `maxDelay` the request may push it up to maxDelay
 * further and is told to wait until its slot — nginx's `burst` without `nodelay`.
 */
export const gcra: Transition<GcraState> = (state, now, policy, cost) => {
  const { limit, window, burst, maxDelay } = policy
  const interval = window / limit
  const tolerance = interval * burst
  const backlog = state === undefined ? 0 : Math.max(0, state.tat - now)
  const nextBacklog = backlog + interval * cost

  if (nextBacklog > tolerance + maxDelay + EPSILON) {
    return {
      state: state as GcraState,
      outcome: denied(
        floorUnits((tolerance - backlog) / interval),
        ceilMs(backlog),
        ceilMs(nextBacklog - tolerance - maxDelay),
      ),
    }
  }
  const outcome = admitted(
    floorUnits((tolerance - nextBacklog) / interval),
    ceilMs(nextBacklog),
    ceilMs(nextBacklog - tolerance),
  )
  return { state: cost === 0 && state !== undefined ? state : { tat: now + nextBacklog }, outcome }
}

/** Moves the TAT back by T per unit, never before now (a schedule already empty has nothing to give). */
export const refundGcra: Refund<GcraState> = (state, now, policy, cost) => {
  if (state === undefined || state.tat <= now) return state
  return { tat: Math.max(now, state.tat - (policy.window / policy.limit) * cost) }
}

/** Overwrites a stored state with a newer one of the same policy, for stores that keep state objects. */
export function copyGcra(into: Mutable<GcraState>, from: GcraState): void {
  into.tat = from.tat
}
