import { ConfigError } from '../diagnostics/errors.js'
import { assertKnownOptions } from '../diagnostics/known-options.js'
import { containObserve, type Observe, type ObserveEvent } from '../diagnostics/observe.js'
import {
  calendarNotServed,
  firstRequestNotServed,
  storeLacks,
  storeNameOf,
  type Validate,
  Warnings,
  warmupNotServed,
} from '../diagnostics/validations.js'
import { calendarResolver } from '../policies/calendar-set.js'
import { toMilliseconds } from '../policies/duration.js'
import {
  type CheckedLimits,
  capacityOf,
  isNamed,
  type Policy,
  type PolicyInput,
  type PolicySet,
  parsePolicies,
  policySetOf,
  supportsShaping,
  withMaxDelay,
} from '../policies/policy.js'
import { type Awaitable, andThen, type Store } from '../stores/contract.js'
import { MemoryStore } from '../stores/memory-store.js'
import { type AcquireOptions, acquirer } from './acquire.js'
import { type BreakerOptions, breakerOf } from './breaker.js'
import { Deadlines } from './deadlines.js'
import type { Decision } from './decision.js'
import { GuardedStore, PEEK } from './guarded-store.js'
import { countingSetOf, type PolicyUsage, usageOf } from './usage.js'

/** Options of `createLimiter`. */
export interface LimiterOptions {
  /** One policy or several, all enforced together: `['100/min', '2/s']`. */
  limits: PolicyInput | readonly PolicyInput[]
  /** Default: a new `MemoryStore`. */
  store?: Store
  /**
   * When the store throws, rejects or times out: `'allow'` (default; keep serving), `'deny'`,
   * or another store to decide instead (e.g. a MemoryStore behind Redis).
   */
  onStoreError?: 'allow' | 'deny' | Store
  /** Milliseconds to wait for an asynchronous store. Default 1000. */
  timeout?: number | string
  /** Shaping budget for every gcra and token-bucket policy that does not set its own. */
  maxDelay?: number | string
  /**
   * Keeps this limiter's counts apart from other limiters with the same policies on the same
   * store (a global '10/min' and a route '10/min'; /login and /reset): keys are stored as
   * `<namespace>:<key>`. Letters, digits and _ . * - only. Default: none, so limiters with the
   * same policy on one store share counts, as one limiter used on several routes does.
   */
  namespace?: string
  /**
   * Stop asking a failing asynchronous store: after `failures` consecutive failures or timeouts
   * decisions go straight to `onStoreError`, with no wait, until a probe after `cooldown`
   * succeeds. Default `{ failures: 5, cooldown: '5s' }`; `false` asks the store every time.
   */
  breaker?: BreakerOptions | false
  /**
   * Called with each event (a decision, a store error, the breaker opening or closing). It never
   * changes a decision; an exception it throws is contained and reported once.
   */
  observe?: Observe
  /**
   * The limiter's warnings (SLUICE_STORE_FAILING, SLUICE_STORE_RECOVERED, SLUICE_OBSERVE_THREW):
   * all on (`true`, the default) or off, or each by its code: `{ SLUICE_STORE_RECOVERED: false }`.
   */
  validate?: Validate
}

/** Per-call options of `limiter.consume`. */
export interface ConsumeOptions {
  /** Units this request takes. Default 1. */
  cost?: number
}

/** Options of `limiter.refund`. */
export interface RefundOptions {
  /** Units to give back: what the refunded consume took. Default 1. */
  cost?: number
  /**
   * When the refunded consume was admitted: `limiter.clock()` read when its decision came. With
   * it, a fixed or sliding window gives back only into the window that consume counted in (a
   * late refund never erases a later request's count). Without it, the newest counts are used.
   */
  admittedAt?: number
}

/** Options of `limiter.settle`: what a request reserved, and what its work turned out to cost. */
export interface SettleOptions {
  /** Units the request's `consume` took: the estimate it was admitted on. */
  reserved: number
  /** Units the work cost, known after it (tokens an LLM call used); 0 or more. */
  actual: number
  /** When that `consume` was admitted: `limiter.clock()` read then (see `RefundOptions.admittedAt`). */
  admittedAt?: number
}

/** Decides requests by key against a set of policies, on one store. Made by `createLimiter`. */
export interface Limiter {
  readonly policies: readonly Policy[]
  /** Decides and, if admitted, takes `cost` from every policy. Never rejects for "limited". */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
  /**
   * Waits until the key has room for `cost`, then takes it: resolves with the admitted decision
   * (after sleeping each denial's `retryAfter`; no polling), or with the denial once admission
   * would come after `maxWait`; rejects with the signal's reason when `signal` aborts. Waiters on
   * one key in this process are admitted first come, first served. For job queues and calls to
   * an API whose limit you must keep.
   */
  acquire(key: string, options?: AcquireOptions): Promise<Decision>
  /** What `consume` with cost 1 would decide, consuming nothing. */
  peek(key: string): Promise<Decision>
  /**
   * What each policy has counted for the key, in the limits' order, consuming nothing: `used`
   * (a window's count as stored, beyond `limit` after an over-spent settle), `limit`,
   * `remaining` and `resetAfter`. For a usage page or a quota API. Store failures reject (the
   * `timeout` applies): a read for display is not a decision.
   */
  usage(key: string): Promise<readonly PolicyUsage[]>
  reset(key: string): Promise<void>
  /**
   * Gives back `cost` units that an admitted `consume` took (a request that should not have
   * counted), by each algorithm's refund rule. Validates as `consume` does. Store failures are
   * not turned into decisions: the promise rejects (the `timeout` applies). Rejects with a
   * `ConfigError` when the store cannot refund (see `canRefund`).
   */
  refund(key: string, options?: RefundOptions): Promise<void>
  /** Whether the store implements refunds (MemoryStore and RedisStore do; the sketch stores do not). */
  readonly canRefund: boolean
  /**
   * Takes `cost` units (default 1) from every policy whatever the limits (rate-limiter-flexible's
   * `penalty`: a failed login that counts as ten), so the key may stay denied until that has
   * drained; with `blockFor`, the next request it denies starts a block. Resolves with a peek
   * after it. Store failures reject, as `refund`'s do; a store without `penalize` (the sketch
   * stores) rejects with a ConfigError.
   */
  penalty(key: string, options?: { cost?: number }): Promise<Decision>
  /**
   * Settles a request whose cost is known only after its work: gives back `reserved - actual`
   * by `refund` (with `admittedAt`, into the window the request was admitted in, never a later
   * one), or charges `actual - reserved` by `penalty`, now, whatever the limits, so an over-spend
   * takes the key below zero and the next requests wait until it has drained. Resolves with a
   * peek after it. Rejects as `refund` and `penalty` do.
   */
  settle(key: string, options: SettleOptions): Promise<Decision>
  /**
   * Blocks the key for `duration` (ms or a duration string) in every policy with `blockFor`, as
   * that policy's own denial would (rate-limiter-flexible's `block`); `reset` lifts it. Resolves
   * with a peek after it. A ConfigError when no policy has `blockFor`, or the store cannot block.
   */
  block(key: string, duration: number | string): Promise<Decision>
  /** The store's clock in epoch ms (its `now()`, else `Date.now()`): what `refund`'s `admittedAt` reads. */
  clock(): number
}

/** Every option `createLimiter` takes: one list, so a new option is one more name here. */
export const LIMITER_OPTION_NAMES: readonly (keyof LimiterOptions)[] = [
  'limits',
  'store',
  'onStoreError',
  'timeout',
  'maxDelay',
  'namespace',
  'breaker',
  'observe',
  'validate',
]

/**
 * A limiter for `options.limits` on `options.store` (a new `MemoryStore` by default). Throws a
 * `ConfigError` naming the field for invalid options; a string literal in `limits` that is no
 * shorthand policy does not compile.
 */
export function createLimiter<const L extends LimiterOptions['limits'] = LimiterOptions['limits']>(
  options: LimiterOptions & { limits: L & CheckedLimits<L> },
): Limiter {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError('options', options, 'must be an object such as { limits: ["100/min"] }')
  }
  assertKnownOptions(options as unknown as Record<string, unknown>, LIMITER_OPTION_NAMES, 'createLimiter()')
  const set = withLimiterMaxDelay(parsePolicies(options.limits), options.maxDelay)
  const store = options.store ?? new MemoryStore()
  assertStore('store', store, 'must be a store with consume, peek and reset methods')
  assertServes(store, set)
  const onStoreError = options.onStoreError ?? 'allow'
  if (onStoreError !== 'allow' && onStoreError !== 'deny') {
    assertStore('onStoreError', onStoreError, "must be 'allow', 'deny' or a fallback store")
  }
  const deadlines = new Deadlines(toMilliseconds('timeout', options.timeout ?? 1000))
  const { namespace } = options
  if (namespace !== undefined && (typeof namespace !== 'string' || !/^[A-Za-z0-9_.*-]+$/.test(namespace))) {
    throw new ConfigError('namespace', namespace, 'must be a non-empty string of letters, digits and _ . * -')
  }
  const breaker = breakerOf(options.breaker)
  const warnings = new Warnings(options.validate)
  const emit = containObserve(options.observe, warnings)
  const guarded = new GuardedStore({ store, set, namespace, onStoreError, deadlines, breaker, warnings, emit })
  return new StoreLimiter(set, guarded, namespace, emit)
}

/**
 * The limiter `createLimiter` makes: its policies on a `GuardedStore`, with what each call
 * checks before the store is asked. Its methods are fields bound to it, so that a method taken
 * from it (`const { consume } = limiter`) still works. Beyond `Limiter`, the HTTP handlers read
 * `consumeNow` and what the shared-policy check needs (`store`, `set`, `namespace`).
 */
export class StoreLimiter implements Limiter {
  readonly policies: readonly Policy[]
  readonly canRefund: boolean
  /** The policies as given, their calendar periods unresolved. */
  readonly set: PolicySet
  readonly namespace: string | undefined
  readonly #guarded: GuardedStore
  /** The most units these limits can ever admit at once: a cost's upper bound. */
  readonly #maxCost: number
  /** Resolves the set's calendar periods for a key and a time; undefined when it has none. */
  readonly #resolve: ((key: string, now: number) => PolicySet) | undefined
  /** The `observe` option, made safe (see `containObserve`); undefined without one. */
  readonly #emit: ((event: ObserveEvent) => void) | undefined

  constructor(
    set: PolicySet,
    guarded: GuardedStore,
    namespace: string | undefined,
    emit: ((event: ObserveEvent) => void) | undefined,
  ) {
    this.policies = set.policies
    this.set = set
    this.namespace = namespace
    this.#guarded = guarded
    this.canRefund = typeof guarded.store.refund === 'function'
    this.#maxCost = Math.min(...set.policies.map(capacityOf))
    this.#resolve = calendarResolver(set)
    this.#emit = emit
    const { store } = guarded
    this.clock = typeof store.now === 'function' ? () => (store.now as () => number)() : Date.now
  }

  /** The store the limiter decides on. */
  get store(): Store {
    return this.#guarded.store
  }

  readonly clock: () => number

  /**
   * `consume`, but a decision the store made synchronously (memory) comes back as a value, not a
   * promise, and bad input throws instead of rejecting. The HTTP handlers use it so that a request
   * on a memory store takes no promise hop (see `consumeNowOf`).
   */
  readonly consumeNow = (key: string, options?: ConsumeOptions): Awaitable<Decision> => {
    // Only a missing cost means 1: a null from a lookup that found nothing is a mistake.
    const cost: unknown = options === undefined ? 1 : costOf(options, 'consume')
    if (typeof key !== 'string') throw keyError(key)
    // A cost of 1 always fits (every policy admits at least 1): most calls skip the checks.
    const invalid = cost === 1 ? undefined : this.#costError(cost)
    if (invalid !== undefined) throw invalid
    return this.#decide(key, cost as number)
  }

  /** A consume or peek, reported to `observe` when there is one. */
  #decide(key: string, cost: number): Awaitable<Decision> {
    return this.#emit === undefined ? this.#run(key, cost) : this.#observed(key, cost)
  }

  readonly consume = (key: string, options?: ConsumeOptions): Promise<Decision> => {
    try {
      return promised(this.consumeNow(key, options))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  readonly acquire: (key: string, options?: AcquireOptions) => Promise<Decision> = acquirer(this)

  readonly peek = (key: string): Promise<Decision> => {
    if (typeof key !== 'string') return Promise.reject(keyError(key))
    try {
      return promised(this.#decide(key, PEEK))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  readonly usage = async (key: string): Promise<readonly PolicyUsage[]> => {
    if (typeof key !== 'string') throw keyError(key)
    const on = this.#setFor(key)
    const counting = countingSetOf(on)
    const [outcomes, counts] = await Promise.all([
      this.#guarded.peek(key, on),
      counting === undefined ? undefined : this.#guarded.peek(key, counting),
    ])
    return usageOf(on, outcomes, counts)
  }

  readonly reset = async (key: string): Promise<void> => {
    if (typeof key !== 'string') throw keyError(key)
    await this.#guarded.reset(key, this.#setFor(key))
  }

  readonly refund = async (key: string, options?: RefundOptions): Promise<void> => {
    const cost: unknown = options === undefined ? 1 : costOf(options, 'refund')
    if (typeof key !== 'string') throw keyError(key)
    const invalid = this.#costError(cost)
    if (invalid !== undefined) throw invalid
    if (!this.canRefund) throw storeLacks('refund', this.store)
    const { admittedAt } = options ?? {}
    assertAdmittedAt(admittedAt)
    await this.#guarded.refund(key, this.#setFor(key, admittedAt), cost as number, admittedAt)
  }

  readonly penalty = async (key: string, options?: { cost?: number }): Promise<Decision> => {
    const cost: unknown = options === undefined ? 1 : costOf(options, 'penalty')
    if (typeof key !== 'string') throw keyError(key)
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
      throw new ConfigError('cost', cost, 'must be a positive whole number of units')
    }
    if (this.store.penalize === undefined) throw storeLacks('penalize', this.store)
    await this.#guarded.penalize(key, this.#setFor(key), cost)
    return this.#run(key, PEEK)
  }

  readonly settle = async (key: string, options: SettleOptions): Promise<Decision> => {
    if (typeof key !== 'string') throw keyError(key)
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object { reserved, actual, admittedAt? }')
    }
    const { reserved, actual, admittedAt } = options
    if (this.#costError(reserved) !== undefined) {
      throw new ConfigError(
        'reserved',
        reserved,
        `must be the cost its consume took, a whole number from 1 to ${this.#maxCost}`,
      )
    }
    if (typeof actual !== 'number' || !Number.isSafeInteger(actual) || actual < 0) {
      throw new ConfigError('actual', actual, 'must be a whole number of units, 0 or more')
    }
    assertAdmittedAt(admittedAt)
    if (actual < reserved) await this.refund(key, { cost: reserved - actual, admittedAt })
    else if (actual > reserved) return this.penalty(key, { cost: actual - reserved })
    return this.#run(key, PEEK)
  }

  readonly block = async (key: string, duration: number | string): Promise<Decision> => {
    if (typeof key !== 'string') throw keyError(key)
    const ms = toMilliseconds('duration', duration)
    if (!this.policies.some((p) => p.blockFor > 0)) {
      throw new ConfigError(
        'limits',
        this.policies.map((p) => p.name),
        'have no policy with blockFor, so nothing can block',
      )
    }
    if (this.store.block === undefined) throw storeLacks('block', this.store)
    await this.#guarded.block(key, this.#setFor(key), ms)
    return this.#run(key, PEEK)
  }

  /** The set a request for `key` at `at` (default now) is decided on: `set`, its calendar periods resolved. */
  #setFor(key: string, at?: number): PolicySet {
    const resolve = this.#resolve
    return resolve === undefined ? this.set : resolve(key, at ?? this.clock())
  }

  /** A consume of `cost` (a peek for PEEK) as a decision. */
  #run(key: string, cost: number): Awaitable<Decision> {
    // Outside the store's guard: a calendar anchor that is no date is the caller's mistake, not the store's.
    return this.#guarded.decide(key, cost, this.#setFor(key))
  }

  /** `#run`, reporting each consume's decision and how long it took; used only with `observe`. */
  #observed(key: string, cost: number): Awaitable<Decision> {
    const start = performance.now()
    return andThen(this.#run(key, cost), (decision) => {
      if (cost !== PEEK) this.#emit?.({ type: 'decision', key, decision, cost, storeMs: performance.now() - start })
      return decision
    })
  }

  /** A ConfigError when `cost` is not a cost these limits could ever admit. */
  #costError(cost: unknown): ConfigError | undefined {
    const maxCost = this.#maxCost
    return typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > maxCost
      ? new ConfigError(
          'cost',
          cost,
          `must be a whole number from 1 to ${maxCost} (the most these limits can ever admit at once)`,
        )
      : undefined
  }
}

/**
 * `limiter.consume`, but a decision the store made synchronously (memory) comes back as a value,
 * not a promise, and bad input throws instead of rejecting (see `StoreLimiter.consumeNow`).
 * Limiters not made by `createLimiter` fall back to their own `consume`.
 */
export function consumeNowOf(limiter: Limiter): (key: string, options?: ConsumeOptions) => Awaitable<Decision> {
  return limiter instanceof StoreLimiter ? limiter.consumeNow : (key, options) => limiter.consume(key, options)
}

function withLimiterMaxDelay(set: PolicySet, maxDelay: unknown): PolicySet {
  if (maxDelay === undefined) return set
  const ms = toMilliseconds('maxDelay', maxDelay, { allowZero: true })
  if (!set.policies.some((p) => supportsShaping(p.algorithm))) {
    throw new ConfigError(
      'maxDelay',
      maxDelay,
      'needs a gcra or token-bucket policy in limits; other algorithms cannot delay',
    )
  }
  const policies = set.policies.map((p) => (supportsShaping(p.algorithm) && p.maxDelay === 0 ? withMaxDelay(p, ms) : p))
  return policySetOf(policies)
}

/**
 * A decision, or a promise of one, as a promise. Both branches resolve alike; the branch is for
 * V8: having read `then` here (not in `isThenable`, which sees every kind of value), it knows a
 * decision's shape has none and resolves without looking `then` up again, which was about a
 * tenth of an awaited memory-store decision.
 */
function promised(decided: Awaitable<Decision>): Promise<Decision> {
  return typeof (decided as { then?: unknown }).then === 'function'
    ? Promise.resolve(decided)
    : Promise.resolve(decided as Decision)
}

function assertAdmittedAt(admittedAt: unknown): void {
  if (admittedAt !== undefined && (typeof admittedAt !== 'number' || !Number.isFinite(admittedAt))) {
    throw new ConfigError('admittedAt', admittedAt, 'must be epoch milliseconds from limiter.clock()')
  }
}

/**
 * The `cost` of a call's options (1 when missing). A number instead of the options is
 * rate-limiter-flexible's `consume(key, points)`: a ConfigError, never a silent cost of 1.
 */
function costOf(options: { cost?: number } | null, method: string): unknown {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError(
      'options',
      options,
      `must be an object such as { cost: 3 }: write ${method}(key, { cost: ${typeof options === 'number' ? options : 'n'} }), not ${method}(key, n)`,
    )
  }
  return options.cost === undefined ? 1 : options.cost
}

function keyError(key: unknown): ConfigError {
  return new ConfigError('key', key, 'must be a string')
}

/**
 * A ConfigError naming the first policy whose algorithm, calendar period, first-request window or warm-up
 * the store says it cannot serve, or whose name it cannot keep across a change of limit.
 */
function assertServes(store: Store, set: PolicySet): void {
  const { algorithms: served, namedAlgorithms: named } = store
  const storeName = storeNameOf(store)
  for (const [i, policy] of set.policies.entries()) {
    if (policy.calendar !== undefined && store.calendarPeriods !== true) {
      throw calendarNotServed(`limits[${i}].period`, policy.calendar.period, store, policy.name)
    }
    if (policy.start === 'first-request' && store.firstRequestWindows !== true) {
      throw firstRequestNotServed(`limits[${i}].start`, store, policy.name)
    }
    if (policy.warmup > 0 && store.warmup !== true) {
      throw warmupNotServed(`limits[${i}].warmup`, policy.warmup, store, policy.name)
    }
    if (served !== undefined && !served.includes(policy.algorithm)) {
      throw new ConfigError(
        `limits[${i}].algorithm`,
        policy.algorithm,
        `is not served by ${storeName} (it serves ${served.join(', ')}); policy "${policy.name}"`,
      )
    }
    if (named !== undefined && isNamed(policy) && !named.includes(policy.algorithm)) {
      throw new ConfigError(
        `limits[${i}].name`,
        policy.name,
        `cannot be kept across limit changes by ${storeName} for ${policy.algorithm} (it keeps named ${
          named.length === 0 ? 'policies of no algorithm' : named.join(', ')
        }); remove the name or use another store`,
      )
    }
  }
}

function assertStore(field: string, store: unknown, expectation: string): asserts store is Store {
  const candidate = store as Partial<Store> | null
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.consume !== 'function' ||
    typeof candidate.peek !== 'function' ||
    typeof candidate.reset !== 'function'
  ) {
    throw new ConfigError(field, store, expectation)
  }
}
