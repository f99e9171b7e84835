import { ALGORITHMS, type AlgorithmName, type Policy } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'

/**
 * One call from a `DurableObjectStore` to a `RateLimiterObject`: a JSON body POSTed to the
 * object's `fetch`. `now` is the caller's clock when the store was given one (tests); otherwise
 * the object reads its own. The policies are as the limiter resolved them: a calendar period is a
 * fixed window with its `offset`, sent without its `calendar`.
 */
export type LimiterRequest =
  | { op: 'consume'; key: string; policies: readonly Policy[]; cost: number; now?: number }
  | { op: 'peek'; key: string; policies: readonly Policy[]; now?: number }
  | { op: 'reset'; key: string; policies: readonly Policy[]; now?: number }
  | { op: 'refund'; key: string; policies: readonly Policy[]; cost: number; admittedAt?: number; now?: number }
  | { op: 'penalize'; key: string; policies: readonly Policy[]; cost: number; now?: number }
  | { op: 'block'; key: string; policies: readonly Policy[]; duration: number; now?: number }

/** What the object answers: the outcomes, aligned with the policies, for consume and peek; null otherwise. */
export type LimiterResponse = readonly Outcome[] | null

/** The URL the store POSTs to; the object ignores it (a stub's fetch needs an absolute URL). */
export const PROTOCOL_URL = 'https://sluice.durable-object/'

const OPS: ReadonlySet<string> = new Set(['consume', 'peek', 'reset', 'refund', 'penalize', 'block'])
/** The numbers of a policy the transitions read: one missing would decide on NaN and limit nothing. */
const POLICY_NUMBERS = ['limit', 'window', 'burst', 'precision', 'maxDelay', 'blockFor', 'offset'] as const

/** The request if `body` is one, else a sentence saying what is wrong with it. */
export function parseRequest(body: unknown): LimiterRequest | string {
  if (body === null || typeof body !== 'object') return 'the body must be a JSON object'
  const { op, key, policies } = body as Record<string, unknown>
  if (typeof op !== 'string' || !OPS.has(op)) return `op must be one of ${[...OPS].join(', ')}`
  if (typeof key !== 'string') return 'key must be a string'
  if (!Array.isArray(policies) || policies.length === 0) return 'policies must be a non-empty array'
  for (const [i, policy] of policies.entries()) {
    if (policy === null || typeof policy !== 'object') return `policies[${i}] must be a policy object`
    const fields = policy as Record<string, unknown>
    if (typeof fields.id !== 'string') return `policies[${i}].id must be a string`
    if (!ALGORITHMS.includes(fields.algorithm as AlgorithmName)) {
      return `policies[${i}].algorithm must be one of ${ALGORITHMS.join(', ')}`
    }
    for (const name of POLICY_NUMBERS) {
      if (!Number.isFinite(fields[name])) return `policies[${i}].${name} must be a finite number`
    }
    // Absent from a store older than the options: no warm-up (a warming policy's store declares warmup).
    if (fields.warmup !== undefined && !(Number.isFinite(fields.warmup) && (fields.warmup as number) >= 0)) {
      return `policies[${i}].warmup must be a finite number of ms, 0 for none`
    }
    if ((fields.warmup as number) > 0 && !(Number.isFinite(fields.coldFactor) && (fields.coldFactor as number) > 1)) {
      return `policies[${i}].coldFactor must be a finite number above 1 with warmup`
    }
    // Absent from a store older than the option: its windows start on the clock.
    if (fields.start !== undefined && fields.start !== 'clock' && fields.start !== 'first-request') {
      return `policies[${i}].start must be 'clock' or 'first-request'`
    }
  }
  for (const name of ['cost', 'duration', 'now', 'admittedAt']) {
    const value = (body as Record<string, unknown>)[name]
    if (value !== undefined && !Number.isFinite(value)) return `${name} must be a finite number`
  }
  return body as LimiterRequest
}
