import { labelled, type Outcome } from '../algorithms/outcome.js'
import type { AlgorithmName, Policy } from '../policies/policy.js'

/** One policy's part of a decision. Times are whole milliseconds from now. */
export interface PolicyDecision {
  readonly name: string
  readonly algorithm: AlgorithmName
  readonly limit: number
  readonly window: number
  readonly allowed: boolean
  readonly remaining: number
  readonly resetAfter: number
  readonly retryAfter: number
  readonly delay: number
  /** Admitted with nothing remaining: the time until one more unit is available (see `Outcome`). */
  readonly nextAfter?: number | undefined
}

/**
 * Who answered: the primary store, the fallback store after the primary failed, or the
 * `onStoreError` policy ('allow' or 'deny') with no store at all.
 */
export type DecisionSource = 'store' | 'fallback' | 'error'

/** The answer to one request, across every policy of the limiter (see the README for each field). */
export interface Decision {
  readonly allowed: boolean
  /** `limit`, `remaining` and `resetAfter` describe the binding policy: the one that denied, or the one closest to exhaustion. */
  readonly limit: number
  readonly remaining: number
  readonly resetAfter: number
  /** 0 when allowed, else the time until the same request could succeed. */
  readonly retryAfter: number
  /** Shaping: how long to hold an admitted request before it proceeds (0 = go now). */
  readonly delay: number
  /** One entry per policy, in the order given. */
  readonly policies: readonly PolicyDecision[]
  /** The entry of `policies` that `limit`, `remaining` and `resetAfter` describe. */
  readonly binding: PolicyDecision
  /** The key the decision is for. */
  readonly key: string
  readonly source: DecisionSource
  /** The store's error, when `source` is not 'store'. */
  readonly error?: unknown
}

/** Combines per-policy outcomes into a `Decision`: all-or-nothing, with the binding policy chosen as documented. */
export function toDecision(
  key: string,
  policies: readonly Policy[],
  outcomes: readonly Outcome[],
  source: DecisionSource,
  error?: unknown,
): Decision {
  const entries: PolicyDecision[] = new Array(policies.length)
  for (let i = 0; i < policies.length; i++) entries[i] = entryOf(policies[i] as Policy, outcomes[i] as Outcome)
  return decisionOf(key, entries, source, error)
}

/** An outcome as the Decision's entry for its policy. */
export function entryOf(policy: Policy, o: Outcome): PolicyDecision {
  return labelled(policy, o.allowed, o.remaining, o.resetAfter, o.retryAfter, o.delay, o.nextAfter)
}

/**
 * The Decision of the entries of every policy: all-or-nothing, the binding policy chosen as
 * documented. `toDecision` for outcomes already made as entries (`Labelled`), which become the
 * decision's `policies` as they are.
 */
export function decisionOf(
  key: string,
  entries: readonly PolicyDecision[],
  source: DecisionSource,
  error?: unknown,
): Decision {
  let allowed = true
  let binding = 0
  let retryAfter = 0
  let delay = 0
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as PolicyDecision
    if (entry.delay > delay) delay = entry.delay
    if (!entry.allowed) {
      if (allowed || entry.retryAfter > retryAfter) binding = i
      allowed = false
      if (entry.retryAfter > retryAfter) retryAfter = entry.retryAfter
    } else if (allowed && entry.remaining < (entries[binding] as PolicyDecision).remaining) {
      binding = i
    }
  }
  const chosen = entries[binding] as PolicyDecision
  const decision: Decision = {
    allowed,
    limit: chosen.limit,
    remaining: chosen.remaining,
    resetAfter: chosen.resetAfter,
    retryAfter,
    delay: allowed ? delay : 0,
    policies: entries,
    binding: chosen,
    key,
    source,
  }
  return error === undefined ? decision : { ...decision, error }
}
