import type { Policy } from '../policies/policy.js'
import { admitted, ceilMs, denied, EPSILON, floorUnits, type Outcome } from './outcome.js'

/**
 * Warm-up (`PolicyOptions.warmup`): Guava's `SmoothWarmingUp` geometry, shared by the token
 * bucket and GCRA, which both read their state here as a backlog (ms of schedule ahead of now:
 * GCRA's TAT − now, a bucket's missing tokens over its rate) and a coldness.
 *
 * Guava → sluice. Guava's stored permits are `cold`: units of coldness that accrue while the
 * schedule is empty (Guava: after nextFreeTicket; here GCRA's TAT passed, the bucket full) at
 * maxCold/warmup per ms up to maxCold. Each admitted unit takes one, and costs the schedule the
 * interval at its level, f(x) = T + slope·(x − threshold) above `threshold`, T = window/limit
 * below (fresh units too): cold (x = maxCold, a new key too) a unit costs coldFactor·T. With
 * threshold = warmup/(2T) and maxCold = threshold + 2·warmup/(T·(1 + coldFactor)), the area under
 * f from maxCold down to threshold is `warmup`: under saturation the admitted rate rises linearly
 * in x from limit/coldFactor to limit in exactly `warmup`. Guava's nextFreeTicket is the backlog,
 * and its pay-later survives in one rule: a request that finds the schedule empty is admitted
 * even when its cold cost runs past burst + maxDelay (the ones after it wait), so no cost the
 * warm policy admits is refused forever to a cold one. Times go to floats: the token bucket's
 * exact integer tokens do not hold for a warming bucket.
 */

/** The most coldness a key holds: the coldness of a new key, and of one idle for `warmup`. */
export function maxColdOf({ limit, window, warmup, coldFactor }: Policy): number {
  const interval = window / limit
  return (0.5 * warmup) / interval + (2 * warmup) / (interval * (1 + coldFactor))
}

/** `cold` after `idle` ms with the schedule empty (a negative `idle`: none). */
export function cooled(cold: number, idle: number, policy: Policy): number {
  if (idle <= 0) return cold
  const maxCold = maxColdOf(policy)
  return Math.min(maxCold, cold + (idle * maxCold) / policy.warmup)
}

/** Milliseconds of schedule that `cost` units take from coldness `cold` (Guava's storedPermitsToWaitTime + fresh). */
export function coldCost(cold: number, cost: number, policy: Policy): number {
  const { limit, window, warmup, coldFactor } = policy
  const interval = window / limit
  const threshold = (0.5 * warmup) / interval
  const slope = ((coldFactor - 1) * interval) / (maxColdOf(policy) - threshold)
  const above = Math.max(0, cold - threshold)
  const taken = Math.min(cost, above)
  const top = interval + above * slope
  return (taken * (top + (top - taken * slope))) / 2 + (cost - taken) * interval
}

/** The most whole units whose `coldCost` from `cold` fits in `budget` ms (the cost inverted). */
function unitsWithin(cold: number, budget: number, policy: Policy): number {
  if (budget <= 0) return 0
  const { limit, window, warmup, coldFactor } = policy
  const interval = window / limit
  const threshold = (0.5 * warmup) / interval
  const slope = ((coldFactor - 1) * interval) / (maxColdOf(policy) - threshold)
  const above = Math.max(0, cold - threshold)
  const top = interval + above * slope
  const aboveCost = (above * (top + interval)) / 2
  if (budget >= aboveCost) return floorUnits(above + (budget - aboveCost) / interval)
  // k units from the top cost k·top − slope·k²/2.
  return floorUnits((top - Math.sqrt(top * top - 2 * slope * budget)) / slope)
}

/**
 * A warming policy's outcome from its `backlog` (ms, ≥ 0) and its coldness at now. resetAfter is
 * the time until the state is as a new key's (drained, then cooled to maxCold), so a store may
 * forget it then; the quota left counts units at their cold cost.
 */
export function decideWarm(backlog: number, cold: number, policy: Policy, cost: number, label?: Policy): Outcome {
  const { limit, window, burst, maxDelay, warmup } = policy
  const interval = window / limit
  const tolerance = interval * burst
  const maxCold = maxColdOf(policy)
  const next = backlog + coldCost(cold, cost, policy)
  const fits = interval * cost <= tolerance + maxDelay + EPSILON
  if (next > tolerance + maxDelay + EPSILON && !(backlog <= EPSILON && fits)) {
    // Once the schedule has emptied, the request pays later: it waits at most that long.
    const wait = next - tolerance - maxDelay
    return denied(
      unitsWithin(cold, tolerance - backlog, policy),
      ceilMs(backlog + ((maxCold - cold) * warmup) / maxCold),
      ceilMs(fits ? Math.min(wait, backlog) : wait),
      label,
    )
  }
  const left = cold - Math.min(cost, cold)
  const remaining = unitsWithin(left, tolerance - next, policy)
  return admitted(
    remaining,
    ceilMs(next + ((maxCold - left) * warmup) / maxCold),
    ceilMs(Math.min(next - tolerance, maxDelay)),
    remaining === 0 ? Math.max(1, ceilMs(Math.min(next + coldCost(left, 1, policy) - tolerance, next))) : undefined,
    label,
  )
}
