import { didYouMean } from './did-you-mean.js'
import { ConfigError, describe, describeError } from './errors.js'

/**
 * Every runtime warning sluice gives, by code. A warning is a log line about a likely mistake or
 * an outage, never a failed request; each is given at most once per owner (middleware, limiter or
 * store), and `validate` switches it off.
 */
export const WARNING_CODES = [
  'SLUICE_UNTRUSTED_PROXY',
  'SLUICE_PERMISSIVE_TRUST_PROXY',
  'SLUICE_SHARED_POLICY',
  'SLUICE_UNUSABLE_KEY',
  'SLUICE_ACTUAL_COST_FAILED',
  'SLUICE_STORE_FAILING',
  'SLUICE_STORE_RECOVERED',
  'SLUICE_OBSERVE_THREW',
  'SLUICE_MEMORY_STORE_FULL',
] as const

/** One runtime warning's code, as it starts the warning's log line: `[sluice] SLUICE_…: …`. */
export type WarningCode = (typeof WARNING_CODES)[number]

/** The `validate` option: every warning on (`true`, the default) or off, or each code on or off. */
export type Validate = boolean | { readonly [C in WarningCode]?: boolean }

const EXAMPLE = '{ SLUICE_UNTRUSTED_PROXY: false }'

/** Reads a `validate` option into the codes that stay on; a ConfigError names an unknown code. */
function enabledCodes(validate: unknown): ReadonlySet<WarningCode> {
  if (validate === undefined || validate === true) return new Set(WARNING_CODES)
  if (validate === false) return new Set()
  if (validate === null || typeof validate !== 'object' || Array.isArray(validate)) {
    throw new ConfigError('validate', validate, `must be true, false or an object of warning codes such as ${EXAMPLE}`)
  }
  const on = new Set<WarningCode>(WARNING_CODES)
  for (const [code, value] of Object.entries(validate)) {
    if (!(WARNING_CODES as readonly string[]).includes(code)) {
      const near = didYouMean(code, WARNING_CODES)
      const hint = near === undefined ? ` (${WARNING_CODES.join(', ')})` : `: did you mean ${near}?`
      throw new ConfigError('validate', code, `must name only warning codes${hint}`)
    }
    if (typeof value !== 'boolean') throw new ConfigError(`validate.${code}`, value, 'must be true or false')
    if (!value) on.delete(code as WarningCode)
  }
  return on
}

/** The shared-policy warning is given once per process: every middleware sharing the policy would repeat it. */
let saidSharedPolicy = false

/**
 * The warnings of one owner (a middleware, a limiter or a store), each a named check with its
 * code. The owner's `validate` option is read when it is made; a code is said once per owner.
 */
export class Warnings {
  readonly #on: ReadonlySet<WarningCode>
  readonly #said = new Set<WarningCode>()

  constructor(validate?: unknown) {
    this.#on = enabledCodes(validate)
  }

  /** Whether `code` is switched on (it may have been said already). */
  enabled(code: WarningCode): boolean {
    return this.#on.has(code)
  }

  /** Whether `code` is to be said now: on, and not said before by this owner. */
  #due(code: WarningCode): boolean {
    if (!this.#on.has(code) || this.#said.has(code)) return false
    this.#said.add(code)
    return true
  }

  /** A proxy the framework does not trust: every client behind it shares the proxy's address, and one limit. */
  untrustedProxy(setting: string, advice: string): void {
    if (!this.#due('SLUICE_UNTRUSTED_PROXY')) return
    console.warn(
      `[sluice] SLUICE_UNTRUSTED_PROXY: a request came with X-Forwarded-For, but ${setting} does not ` +
        "trust proxies, so the default key is the proxy's address and every client behind it shares one limit. " +
        `If a proxy is in front of the app: ${advice}. ${switchOff('SLUICE_UNTRUSTED_PROXY')}`,
    )
  }

  /** A framework that trusts every forwarded entry: any client picks a fresh key per request. */
  permissiveTrustProxy(setting: string, advice: string): void {
    if (!this.#due('SLUICE_PERMISSIVE_TRUST_PROXY')) return
    console.warn(
      `[sluice] SLUICE_PERMISSIVE_TRUST_PROXY: ${setting} trusts every X-Forwarded-For entry, so the ` +
        'default key is the left-most one, which clients write themselves: any client can take a fresh limit ' +
        `with each request. Trust only the proxies in front of the app: ${advice}. ` +
        switchOff('SLUICE_PERMISSIVE_TRUST_PROXY'),
    )
  }

  /** Two rate limits share a store and a policy without a namespace, so both count every request. */
  sharedPolicy(policy: string): void {
    if (saidSharedPolicy || !this.#due('SLUICE_SHARED_POLICY')) return
    saidSharedPolicy = true
    console.warn(
      `[sluice] SLUICE_SHARED_POLICY: two rate limits use the policy ${policy} on the same store without a namespace, ` +
        'so they share one count (a request through both counts twice; two routes share one budget). Give each ' +
        "limiter its own namespace: rateLimit({ limits, namespace: 'login' }), or pass one limiter to both if sharing " +
        `is meant. ${switchOff('SLUICE_SHARED_POLICY')}`,
    )
  }

  /** A key function returned something that names no client; the request is keyed by the client IP. */
  unusableKey(keyFunction: (...args: never[]) => unknown, value: unknown): void {
    if (!this.#due('SLUICE_UNUSABLE_KEY')) return
    const name = keyFunction.name && keyFunction.name !== 'key' ? ` (${keyFunction.name})` : ''
    const shown = value === '' ? 'an empty string' : value === undefined ? 'undefined' : describe(value)
    console.error(
      `[sluice] SLUICE_UNUSABLE_KEY: the key function${name} returned ${shown}, which names no client ` +
        '(a key is a non-empty string, a finite number or a bigint); such requests are keyed by the client IP ' +
        'instead. Reported once per middleware.',
    )
  }

  /**
   * `actualCost` threw, rejected, or returned what cannot be settled (`failure` says which): the
   * reserved cost stands, and the response has gone, so the log is the only one left to tell.
   */
  actualCostFailed(failure: string, error: unknown): void {
    if (!this.#due('SLUICE_ACTUAL_COST_FAILED')) return
    console.error(
      `[sluice] SLUICE_ACTUAL_COST_FAILED: actualCost ${failure} (${describeError(error)}); the reserved cost ` +
        'stands. Reported once per middleware.',
    )
  }

  /** The store failed: decisions come from `onStoreError` (described by `instead`) until it answers. */
  storeFailing(error: string, instead: string): void {
    if (!this.#due('SLUICE_STORE_FAILING')) return
    console.warn(
      `[sluice] SLUICE_STORE_FAILING: the store failed (${error}); decisions are now ${instead} until it answers again.`,
    )
  }

  /** The store answers again after failing. */
  storeRecovered(): void {
    if (!this.#due('SLUICE_STORE_RECOVERED')) return
    console.warn('[sluice] SLUICE_STORE_RECOVERED: the store answers again; decisions come from it.')
  }

  /** The `observe` function threw or rejected; decisions are unaffected. */
  observeThrew(error: string): void {
    if (!this.#due('SLUICE_OBSERVE_THREW')) return
    console.warn(
      `[sluice] SLUICE_OBSERVE_THREW: the observe function threw (${error}); decisions are ` +
        'unaffected, and later exceptions from it are not reported.',
    )
  }

  /** Every key of a MemoryStore is limited, so a new key cannot be kept. */
  memoryStoreFull(maxKeys: number): void {
    if (!this.#due('SLUICE_MEMORY_STORE_FULL')) return
    console.warn(
      `[sluice] SLUICE_MEMORY_STORE_FULL: all ${maxKeys} keys (maxKeys) of a MemoryStore are limited, so a new key ` +
        "is decided by the limiter's onStoreError ('allow' by default: admitted unlimited) until one expires. " +
        'Set maxKeys above the number of clients that can be limited at once. Reported once per store.',
    )
  }
}

/**
 * What a limiter may ask of a store beyond deciding, by the store's method, and what it cannot
 * do without it. Messages name the method a store must have, and MemoryStore, which has every
 * one; never other packages' stores (each says in its README what it serves).
 */
const STORE_METHODS = {
  refund: 'cannot refund',
  penalize: 'cannot take a penalty',
  block: 'cannot block',
} as const

/** A store's name in a message: its class's. */
export function storeNameOf(store: object): string {
  return store.constructor?.name ?? 'this store'
}

/** The limiter's `store` has no `method`, which the call needs. */
export function storeLacks(method: keyof typeof STORE_METHODS, store: unknown): ConfigError {
  return new ConfigError('store', store, `${STORE_METHODS[method]}: use a store with ${method}(), such as MemoryStore`)
}

/** `field` (an option of the middleware, set to `value`) gives back units, which the limiter's store cannot. */
export function refundsNeeded(field: string, value: unknown): ConfigError {
  return new ConfigError(
    field,
    value,
    "needs a store that can refund (one with refund(), such as MemoryStore); the limiter's cannot",
  )
}

/** A calendar period (`limits[i].period`) on a store that does not say it serves them. */
export function calendarNotServed(field: string, period: string, store: object, policy: string): ConfigError {
  return new ConfigError(
    field,
    period,
    `is not served by ${storeNameOf(store)}: a calendar period needs a store whose fixed windows start where the period does (one with calendarPeriods: true, such as MemoryStore); policy "${policy}"`,
  )
}

/** A first-request fixed window (`limits[i].start`) on a store that does not say it serves them. */
export function firstRequestNotServed(field: string, store: object, policy: string): ConfigError {
  return new ConfigError(
    field,
    'first-request',
    `is not served by ${storeNameOf(store)}: a window from each key's first request needs a store whose fixed windows start there (one with firstRequestWindows: true, such as MemoryStore or RedisStore); use start: 'clock' or another store; policy "${policy}"`,
  )
}

/** A warming policy (`limits[i].warmup`) on a store that does not say it follows warm-up. */
export function warmupNotServed(field: string, warmup: number, store: object, policy: string): ConfigError {
  return new ConfigError(
    field,
    warmup,
    `is not served by ${storeNameOf(store)}: a warm-up needs a store whose buckets cool when idle (one with warmup: true, such as MemoryStore or RedisStore); remove warmup or use another store; policy "${policy}"`,
  )
}

/** How to switch one warning off, for its message. */
function switchOff(code: WarningCode): string {
  return `Pass validate: false, or validate: { ${code}: false }, to turn this check off.`
}
