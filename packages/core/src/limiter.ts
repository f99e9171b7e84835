import { type AcquireOptions, acquirer } from './acquire.js'
import type { Outcome } from './algorithms/index.js'
import { type BreakerOptions, breakerOf } from './breaker.js'
import { calendarResolver } from './calendar-set.js'
import { Deadlines } from './deadlines.js'
import { type Decision, type DecisionSource, toDecision } from './decision.js'
import { toMilliseconds } from './duration.js'
import { ConfigError } from './errors.js'
import { assertKnownOptions } from './known-options.js'
import { containObserve, describeError, type Observe } from './observe.js'
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
} from './policy.js'
import { storedKey } from './stored-key.js'
import { MemoryStore } from './stores/memory-store.js'
import { type Awaitable, andThen, isThenable, type Store } from './stores/store.js'
import { countingSetOf, type PolicyUsage, usageOf } from './usage.js'
import { type Validate, Warnings } from './validations.js'

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

/** The cost that stands for a peek inside the limiter (a consume's cost is at least 1). */
const PEEK = 0

/** How long a request denied by `onStoreError: 'deny'` is told to wait. */
const DENY_ON_ERROR_RETRY_MS = 1000

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
  const timeout = toMilliseconds('timeout', options.timeout ?? 1000)
  const deadlines = new Deadlines(timeout)
  const { namespace } = options
  if (namespace !== undefined && (typeof namespace !== 'string' || !/^[A-Za-z0-9_.*-]+$/.test(namespace))) {
    throw new ConfigError('namespace', namespace, 'must be a non-empty string of letters, digits and _ . * -')
  }
  /** The key as stored: the namespace's, so that ':' in a key can never reach another namespace. */
  const prefix = namespace === undefined ? '' : `${namespace}:`
  const stored = (key: string): string => prefix + storedKey(key)
  const breaker = breakerOf(options.breaker)
  const warnings = new Warnings(options.validate)
  const emit = containObserve(options.observe, warnings)
  const maxCost = Math.min(...set.policies.map(capacityOf))
  const { policies } = set
  const clock = typeof store.now === 'function' ? () => (store.now as () => number)() : Date.now
  /** The set a request for `key` at `at` (default now) is decided on: `set`, its calendar periods resolved. */
  const resolve = calendarResolver(set)
  const setFor = (key: string, at?: number): PolicySet => (resolve === undefined ? set : resolve(key, at ?? clock()))
  /** Whether decisions are coming from onStoreError rather than the store. */
  let failing = false

  /** Asks a store for a decision: a consume of `cost`, or a peek when cost is PEEK. */
  const ask = (target: Store, key: string, cost: number, on: PolicySet): Awaitable<readonly Outcome[]> =>
    cost === PEEK ? target.peek(stored(key), on) : target.consume(stored(key), on, cost)

  /** The store answered: close a breaker this probe was testing, and say so when an outage ends. */
  const recovered = (probe: boolean): void => {
    const openMs = breaker?.succeeded(probe)
    if (openMs !== undefined) emit?.({ type: 'breaker-close', openMs })
    if (failing) {
      failing = false
      warnings.storeRecovered()
    }
  }

  /** The store failed (`skipped`: the open breaker kept it from being asked). */
  const onFailure = async (
    key: string,
    cost: number,
    on: PolicySet,
    error: unknown,
    skipped = false,
  ): Promise<Decision> => {
    if (!skipped) emit?.({ type: 'store-error', key, error })
    failing = true
    // Each warning is given once per limiter: a flapping store must not flood the log.
    warnings.storeFailing(
      describeError(error),
      onStoreError === 'allow'
        ? "allowed without limits (onStoreError: 'allow')"
        : onStoreError === 'deny'
          ? "denied (onStoreError: 'deny')"
          : 'made by the fallback store (onStoreError)',
    )
    if (typeof onStoreError === 'object') {
      try {
        return toDecision(key, policies, await settle(ask(onStoreError, key, cost, on), deadlines), 'fallback', error)
      } catch (fallbackError) {
        return failed(
          key,
          policies,
          false,
          'error',
          new AggregateError([error, fallbackError], 'the store and the fallback store both failed'),
        )
      }
    }
    return failed(key, policies, onStoreError === 'allow', 'error', error)
  }

  /** An asynchronous failure or timeout counts towards the breaker; opening it is an event. */
  const countFailure = (probe: boolean, error: unknown): void => {
    if (breaker?.failed(probe, error)) {
      emit?.({ type: 'breaker-open', failures: breaker.failures, cooldownMs: breaker.cooldown, error })
    }
  }

  /**
   * A synchronous store (memory) is answered at once: no timer, no promise. Only asynchronous
   * failures count towards the breaker: a synchronous store has no wait to save, and a full
   * MemoryStore's refusals of new keys must not stop the limiting of the keys it holds.
   */
  const run = (key: string, cost: number): Awaitable<Decision> => {
    // Outside the try: a calendar anchor that is no date is the caller's mistake, not the store's.
    const on = setFor(key)
    let probe = false
    if (breaker?.open) {
      if (!breaker.tryProbe()) return onFailure(key, cost, on, breaker.openError(), true)
      probe = true
    }
    let answer: Awaitable<readonly Outcome[]>
    try {
      answer = ask(store, key, cost, on)
    } catch (error) {
      const decided = onFailure(key, cost, on, error)
      if (probe) countFailure(probe, error)
      return decided
    }
    if (!isThenable(answer)) {
      if (failing || probe) recovered(probe)
      return toDecision(key, policies, answer, 'store')
    }
    return (settle(answer, deadlines) as Promise<readonly Outcome[]>).then(
      (outcomes) => {
        recovered(probe)
        return toDecision(key, policies, outcomes, 'store')
      },
      (error: unknown) => {
        // The store error's event first, then the breaker's.
        const decided = onFailure(key, cost, on, error)
        countFailure(probe, error)
        return decided
      },
    )
  }

  /** `run`, reporting each consume's decision and how long it took; used only with `observe`. */
  const observed = (key: string, cost: number): Awaitable<Decision> => {
    const start = performance.now()
    return andThen(run(key, cost), (decision) => {
      if (cost !== PEEK) emit?.({ type: 'decision', key, decision, cost, storeMs: performance.now() - start })
      return decision
    })
  }
  const decide = emit === undefined ? run : observed

  /** A ConfigError when `cost` is not a cost these limits could ever admit. */
  const costError = (cost: unknown): ConfigError | undefined =>
    typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1 || cost > maxCost
      ? new ConfigError(
          'cost',
          cost,
          `must be a whole number from 1 to ${maxCost} (the most these limits can ever admit at once)`,
        )
      : undefined

  /** `consume`, answered synchronously when the store is; throws what `consume` rejects with. */
  const consumeNow = (key: string, consumeOptions?: ConsumeOptions): Awaitable<Decision> => {
    // Only a missing cost means 1: a null from a lookup that found nothing is a mistake.
    const cost: unknown = consumeOptions === undefined ? 1 : costOf(consumeOptions, 'consume')
    if (typeof key !== 'string') throw keyError(key)
    // A cost of 1 always fits (every policy admits at least 1): most calls skip the checks.
    const invalid = cost === 1 ? undefined : costError(cost)
    if (invalid !== undefined) throw invalid
    return decide(key, cost as number)
  }

  const limiter: Limiter = {
    policies,
    canRefund: typeof store.refund === 'function',
    clock,
    consume(key, consumeOptions) {
      try {
        return promised(consumeNow(key, consumeOptions))
      } catch (error) {
        return Promise.reject(error)
      }
    },
    acquire: (key, acquireOptions) => acquire(key, acquireOptions),
    peek(key) {
      if (typeof key !== 'string') return Promise.reject(keyError(key))
      try {
        return promised(decide(key, PEEK))
      } catch (error) {
        return Promise.reject(error)
      }
    },
    async usage(key) {
      if (typeof key !== 'string') throw keyError(key)
      const on = setFor(key)
      const counting = countingSetOf(on)
      const [outcomes, counts] = await Promise.all([
        settle(store.peek(stored(key), on), deadlines),
        counting === undefined ? undefined : settle(store.peek(stored(key), counting), deadlines),
      ])
      return usageOf(on, outcomes, counts)
    },
    async reset(key) {
      if (typeof key !== 'string') throw keyError(key)
      await settle(store.reset(stored(key), setFor(key)), deadlines)
    },
    async refund(key, refundOptions) {
      const cost: unknown = refundOptions === undefined ? 1 : costOf(refundOptions, 'refund')
      if (typeof key !== 'string') throw keyError(key)
      const invalid = costError(cost)
      if (invalid !== undefined) throw invalid
      if (store.refund === undefined) {
        throw new ConfigError(
          'store',
          store,
          'cannot refund: use a MemoryStore or RedisStore, or a store with refund()',
        )
      }
      const { admittedAt } = refundOptions ?? {}
      assertAdmittedAt(admittedAt)
      await settle(store.refund(stored(key), setFor(key, admittedAt), cost as number, admittedAt), deadlines)
    },
    async penalty(key, penaltyOptions) {
      const cost: unknown = penaltyOptions === undefined ? 1 : costOf(penaltyOptions, 'penalty')
      if (typeof key !== 'string') throw keyError(key)
      if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
        throw new ConfigError('cost', cost, 'must be a positive whole number of units')
      }
      if (store.penalize === undefined) {
        throw new ConfigError('store', store, 'cannot take a penalty: use a MemoryStore or RedisStore')
      }
      await settle(store.penalize(stored(key), setFor(key), cost), deadlines)
      return run(key, PEEK)
    },
    async settle(key, settleOptions) {
      if (typeof key !== 'string') throw keyError(key)
      if (settleOptions === null || typeof settleOptions !== 'object') {
        throw new ConfigError('options', settleOptions, 'must be an object { reserved, actual, admittedAt? }')
      }
      const { reserved, actual, admittedAt } = settleOptions
      if (costError(reserved) !== undefined) {
        throw new ConfigError(
          'reserved',
          reserved,
          `must be the cost its consume took, a whole number from 1 to ${maxCost}`,
        )
      }
      if (typeof actual !== 'number' || !Number.isSafeInteger(actual) || actual < 0) {
        throw new ConfigError('actual', actual, 'must be a whole number of units, 0 or more')
      }
      assertAdmittedAt(admittedAt)
      if (actual < reserved) await limiter.refund(key, { cost: reserved - actual, admittedAt })
      else if (actual > reserved) return limiter.penalty(key, { cost: actual - reserved })
      return run(key, PEEK)
    },
    async block(key, duration) {
      if (typeof key !== 'string') throw keyError(key)
      const ms = toMilliseconds('duration', duration)
      if (!policies.some((p) => p.blockFor > 0)) {
        throw new ConfigError(
          'limits',
          policies.map((p) => p.name),
          'have no policy with blockFor, so nothing can block',
        )
      }
      if (store.block === undefined) {
        throw new ConfigError('store', store, 'cannot block: use a MemoryStore or RedisStore')
      }
      await settle(store.block(stored(key), setFor(key), ms), deadlines)
      return run(key, PEEK)
    },
  }
  const acquire = acquirer(limiter)
  immediateConsumers.set(limiter, consumeNow)
  sharing.set(limiter, { store, set, namespace })
  return limiter
}

/** What the `validate` check of the HTTP handlers needs to know about a limiter. */
interface Sharing {
  readonly store: Store
  readonly set: PolicySet
  readonly namespace: string | undefined
}
const sharing = new WeakMap<Limiter, Sharing>()
/** Per store, per policy id: the first limiter without a namespace seen using it. */
const seenPolicies = new WeakMap<Store, Map<string, Limiter>>()

/**
 * Records `limiter` as used (by a middleware) and returns the name of a policy that another
 * limiter without a namespace already uses on the same store, so both count every request
 * together (a global '10/min' plus a route '10/min' counts twice). Undefined when there is none,
 * when the limiter has a namespace, or when it was not made by createLimiter.
 */
export function sharedPolicyOf(limiter: Limiter): string | undefined {
  const info = sharing.get(limiter)
  if (info === undefined || info.namespace !== undefined) return undefined
  let seen = seenPolicies.get(info.store)
  if (seen === undefined) {
    seen = new Map()
    seenPolicies.set(info.store, seen)
  }
  let shared: string | undefined
  for (const policy of info.set.policies) {
    const first = seen.get(policy.id)
    if (first === undefined) seen.set(policy.id, limiter)
    else if (first !== limiter) shared ??= policy.name
  }
  return shared
}

/** Each limiter's synchronous-when-possible consume (see `consumeNowOf`). */
const immediateConsumers = new WeakMap<Limiter, ImmediateConsume>()

type ImmediateConsume = (key: string, options?: ConsumeOptions) => Awaitable<Decision>

/**
 * `limiter.consume`, but a decision the store made synchronously (memory) comes back as a value,
 * not a promise, and bad input throws instead of rejecting. The HTTP handlers use it so that a
 * request on a memory store takes no promise hop. Limiters not made by `createLimiter` fall back
 * to their own `consume`.
 */
export function consumeNowOf(limiter: Limiter): ImmediateConsume {
  return immediateConsumers.get(limiter) ?? ((key, options) => limiter.consume(key, options))
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

/** The value itself when the store answered synchronously; otherwise the answer or a timeout. */
function settle<T>(answer: Awaitable<T>, deadlines: Deadlines): Awaitable<T> {
  return isThenable(answer) ? deadlines.settle(answer) : answer
}

function failed(
  key: string,
  policies: readonly Policy[],
  allowed: boolean,
  source: DecisionSource,
  error: unknown,
): Decision {
  const outcomes: Outcome[] = policies.map((p) =>
    allowed
      ? { allowed, remaining: p.limit, resetAfter: 0, retryAfter: 0, delay: 0 }
      : { allowed, remaining: 0, resetAfter: DENY_ON_ERROR_RETRY_MS, retryAfter: DENY_ON_ERROR_RETRY_MS, delay: 0 },
  )
  return toDecision(key, policies, outcomes, source, error)
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
 * A ConfigError naming the first policy whose algorithm or calendar period the store says it
 * cannot serve, or whose name it cannot keep across a change of limit.
 */
function assertServes(store: Store, set: PolicySet): void {
  const { algorithms: served, namedAlgorithms: named } = store
  const storeName = store.constructor?.name ?? 'this store'
  for (const [i, policy] of set.policies.entries()) {
    if (policy.calendar !== undefined && store.calendarPeriods !== true) {
      throw new ConfigError(
        `limits[${i}].period`,
        policy.calendar.period,
        `is not served by ${storeName}: a calendar period needs a store whose fixed windows start where the period does (calendarPeriods: MemoryStore, RedisStore, SyncedStore, DurableObjectStore); policy "${policy.name}"`,
      )
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
