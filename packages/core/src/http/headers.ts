import { ConfigError } from '../diagnostics/errors.js'
import type { Decision, PolicyDecision } from '../limiter/decision.js'

/**
 * `'draft-11'`: the IETF RateLimit / RateLimit-Policy lists, one member per policy.
 * `'draft-7'` and `'draft-6'`: the binding policy only, exactly as express-rate-limit writes
 * them, for clients that parse those shapes. `'legacy'`: `X-RateLimit-*`.
 */
export const HEADER_MODES = ['draft-11', 'draft-7', 'draft-6', 'legacy'] as const
/** One of `HEADER_MODES`. */
export type HeaderMode = (typeof HEADER_MODES)[number]
/** `true` means the default, `'draft-11'`; `false` sends none (Retry-After is still sent on denial). */
export type HeadersOption = HeaderMode | boolean

/**
 * One header to write. `append` marks the structured-field lists that several limiters on one
 * response add to (as members) instead of overwriting.
 */
export interface HeaderEntry {
  readonly name: string
  readonly value: string
  readonly append: boolean
}

/** Validates a `headers` option: a `HeaderMode` or `false` (`undefined` is `draft-11`); throws a `ConfigError` otherwise. */
export function headerModeOption(value: unknown, field = 'headers'): HeaderMode | false {
  if (value === undefined || value === true) return 'draft-11'
  if (value === false) return false
  if (typeof value === 'string' && (HEADER_MODES as readonly string[]).includes(value)) return value as HeaderMode
  const hint =
    typeof value === 'string' && /^draft-(8|9|10)$/.test(value)
      ? `; ${value} has the same syntax as draft-11, so use 'draft-11'`
      : ''
  throw new ConfigError(
    field,
    value,
    `must be one of ${HEADER_MODES.map((m) => `'${m}'`).join(', ')}, true or false${hint}`,
  )
}

/** Whole seconds, rounded up, never below 1: the Retry-After value for a wait of `ms`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}

/**
 * Seconds until the policy's quota comes back. A policy that denied reports its retry time, so
 * that Retry-After never points before the end of the effective window (draft-11 §6) and
 * draft-6's Reset matches Retry-After; one that admitted with nothing left reports when the
 * next unit is available (what a denial a moment later would say), not when the whole quota is.
 */
export function resetSeconds(policy: PolicyDecision): number {
  return Math.max(0, Math.ceil(resetMs(policy) / 1000))
}

function resetMs(policy: PolicyDecision): number {
  if (!policy.allowed) return policy.retryAfter
  return policy.remaining === 0 && policy.nextAfter !== undefined ? policy.nextAfter : policy.resetAfter
}

/** A window in whole seconds, rounded up and at least 1 (draft-11 `w` is non-zero). */
function windowSeconds(policy: Pick<PolicyDecision, 'window'>): number {
  return Math.max(1, Math.ceil(policy.window / 1000))
}

/** Serialised policy names: a handful per app, asked for on every response. */
const serialised = new Map<string, string>()
/** Names come from configuration; the bound only guards against names built per request. */
const MAX_SERIALISED = 1000

/** An RFC 9651 String: printable ASCII only, with `"` and `\` escaped. */
export function sfString(text: string): string {
  let value = serialised.get(text)
  if (value === undefined) {
    if (!/^[\x20-\x7e]*$/.test(text))
      throw new ConfigError('name', text, 'must be printable ASCII to appear in a header')
    value = `"${text.replace(/[\\"]/g, '\\$&')}"`
    if (serialised.size < MAX_SERIALISED) serialised.set(text, value)
  }
  return value
}

/**
 * The rate-limit headers for a decision in the given mode (Retry-After is separate, see
 * `retryAfterSeconds`). `now` (epoch ms) is used only by `'legacy'`, whose Reset is an epoch
 * time in seconds as express-rate-limit and GitHub send it.
 */
export function rateLimitHeaders(
  decision: Decision,
  mode: HeaderMode | false,
  now: number = Date.now(),
): HeaderEntry[] {
  return rateLimitHeaderWriter(decision.policies, mode)(decision, now)
}

/** What a policy's headers say about it whatever the decision: its name, limit and window. */
type PolicyShape = Pick<PolicyDecision, 'name' | 'limit' | 'window'>

/**
 * `rateLimitHeaders` for the decisions of one limiter, whose policies are given in the order its
 * decisions list them. What depends on the policies alone (draft-11's whole RateLimit-Policy and
 * each member's name) is serialised here, once, instead of on every response.
 */
export function rateLimitHeaderWriter(
  policies: readonly PolicyShape[],
  mode: HeaderMode | false,
): (decision: Decision, now?: number) => HeaderEntry[] {
  if (mode === false) return () => []
  if (mode === 'draft-11') {
    const policy = entry(
      'RateLimit-Policy',
      policies.map((p) => `${sfString(p.name)};q=${p.limit};w=${windowSeconds(p)}`).join(', '),
      true,
    )
    const members = policies.map((p, i) => `${i > 0 ? ', ' : ''}${sfString(p.name)};r=`)
    return (decision) => {
      let state = ''
      for (let i = 0; i < members.length; i++) {
        const p = decision.policies[i] as PolicyDecision
        state += `${members[i]}${p.remaining};t=${resetSeconds(p)}`
      }
      return [policy, entry('RateLimit', state, true)]
    }
  }
  return (decision, now = Date.now()) => bindingHeaders(decision.binding, mode, now)
}

/** Draft-7, draft-6 and legacy headers: they describe the binding policy only. */
function bindingHeaders(binding: PolicyDecision, mode: Exclude<HeaderMode, 'draft-11'>, now: number): HeaderEntry[] {
  const limit = String(binding.limit)
  const remaining = String(binding.remaining)
  const reset = resetSeconds(binding)
  switch (mode) {
    case 'draft-7':
      return [
        entry('RateLimit-Policy', `${limit};w=${windowSeconds(binding)}`),
        entry('RateLimit', `limit=${limit}, remaining=${remaining}, reset=${reset}`),
      ]
    case 'draft-6':
      return [
        entry('RateLimit-Policy', `${limit};w=${windowSeconds(binding)}`),
        entry('RateLimit-Limit', limit),
        entry('RateLimit-Remaining', remaining),
        entry('RateLimit-Reset', String(reset)),
      ]
    case 'legacy':
      return [
        entry('X-RateLimit-Limit', limit),
        entry('X-RateLimit-Remaining', remaining),
        entry('X-RateLimit-Reset', String(Math.ceil((now + resetMs(binding)) / 1000))),
      ]
  }
}

/**
 * Draft-11 headers for an in-flight limit: quota unit `"concurrent-requests"`, no window.
 * Other modes have no way to say "concurrent", so they send nothing.
 */
export function concurrencyHeaders(
  name: string,
  limit: number,
  available: number,
  mode: HeaderMode | false,
): HeaderEntry[] {
  if (mode !== 'draft-11') return []
  return [
    entry('RateLimit-Policy', `${sfString(name)};q=${limit};qu="concurrent-requests"`, true),
    entry('RateLimit', `${sfString(name)};r=${Math.max(0, available)}`, true),
  ]
}

/** The `Retry-After` header for a wait of `ms`: whole seconds, rounded up, at least 1. */
export function retryAfterHeader(ms: number): HeaderEntry {
  return entry('Retry-After', String(retryAfterSeconds(ms)))
}

/** Lower-cased header names, cached: the few that sluice writes, asked for on every response. */
const lowerCased = new Map<string, string>()

/**
 * A header name in lower case, as Node's `res.hasHeader` and `setHeader` and Web `Headers` look
 * names up: a name already in lower case saves them a new string (and its hash) on every call.
 */
export function lowerCaseName(name: string): string {
  let lowered = lowerCased.get(name)
  if (lowered === undefined) {
    lowered = name.toLowerCase()
    lowerCased.set(name, lowered)
  }
  return lowered
}

function entry(name: string, value: string, append = false): HeaderEntry {
  return { name, value, append }
}
