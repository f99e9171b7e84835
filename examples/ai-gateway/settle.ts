import type { Decision, Limiter } from '@sluice/core'

/**
 * Charges what a request really cost once it is known: gives back what the estimate took too
 * much (a refund into the window the request was admitted in, never a later one) or takes what
 * it took too little (a penalty, which may leave the key below zero so the next requests wait).
 * When `limiter.settle(key, { reserved, actual, admittedAt })` is in core, this whole function is
 * that one call.
 */
export async function settle(
  limiter: Limiter,
  key: string,
  { reserved, actual, admittedAt }: { reserved: number; actual: number; admittedAt: number },
): Promise<Decision> {
  if (actual < reserved) await limiter.refund(key, { cost: reserved - actual, admittedAt })
  if (actual > reserved) return limiter.penalty(key, { cost: actual - reserved })
  return limiter.peek(key)
}
