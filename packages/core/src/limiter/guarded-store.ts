import type { Outcome } from '../algorithms/index.js'
import { describeError } from '../diagnostics/errors.js'
import type { ObserveEvent } from '../diagnostics/observe.js'
import type { Warnings } from '../diagnostics/validations.js'
import type { Policy, PolicySet } from '../policies/policy.js'
import { type Awaitable, isThenable, type Store } from '../stores/contract.js'
import { FallbackShare } from '../stores/fallback-share.js'
import { consumeEntries, MemoryStore } from '../stores/memory-store.js'
import type { Breaker } from './breaker.js'
import type { Deadlines } from './deadlines.js'
import { type Decision, type DecisionSource, decisionOf, type PolicyDecision, toDecision } from './decision.js'
import { storedKey } from './stored-key.js'

/** The cost that stands for a peek inside the limiter (a consume's cost is at least 1). */
export const PEEK = 0

/** How long a request denied by `onStoreError: 'deny'` is told to wait. */
const DENY_ON_ERROR_RETRY_MS = 1000

/** A MemoryStore's own `consume` and `peek`: a store that has both (not a subclass's or a spy's) is asked through `consumeEntries`. */
const memoryConsume = MemoryStore.prototype.consume
const memoryPeek = MemoryStore.prototype.peek

/** What a `GuardedStore` is made of: the limiter's store and what it does when the store fails. */
export interface Guard {
  readonly store: Store
  /** The limiter's policies, which every decision reports on. */
  readonly set: PolicySet
  /** Keys are stored as `<namespace>:<key>` (see `LimiterOptions.namespace`). */
  readonly namespace: string | undefined
  readonly onStoreError: 'allow' | 'deny' | Store
  readonly deadlines: Deadlines
  readonly breaker: Breaker | undefined
  readonly warnings: Warnings
  readonly emit: ((event: ObserveEvent) => void) | undefined
}

/**
 * A limiter's store as the limiter asks it: each key in the limiter's namespace, each answer
 * within the timeout, no asking while the breaker is open, `onStoreError`'s decision when the
 * store fails, and the warnings and events of an outage. Made by `createLimiter`; its methods
 * take a set of policies as the store is to see it (calendar periods resolved).
 */
export class GuardedStore {
  readonly store: Store
  /**
   * The limiter's set when the store is a MemoryStore that answers it in entries (see
   * `consumeEntries`). Such a store answers every decision synchronously, so the breaker never
   * opens on it (only asynchronous failures count).
   */
  readonly #entriesFor: PolicySet | undefined
  readonly #policies: readonly Policy[]
  /** The key as stored: the namespace's, so that ':' in a key can never reach another namespace. */
  readonly #stored: (key: string) => string
  readonly #onStoreError: 'allow' | 'deny' | Store
  readonly #deadlines: Deadlines
  readonly #breaker: Breaker | undefined
  readonly #warnings: Warnings
  readonly #emit: ((event: ObserveEvent) => void) | undefined
  /** Whether decisions are coming from onStoreError rather than the store. */
  #failing = false
  /** A fallback that counts what the store admits (this process's share of each limit). */
  readonly #share: FallbackShare | undefined

  constructor(guard: Guard) {
    this.store = guard.store
    const { consume, peek } = guard.store
    this.#entriesFor = consume === memoryConsume && peek === memoryPeek ? guard.set : undefined
    this.#policies = guard.set.policies
    const prefix = guard.namespace === undefined ? '' : `${guard.namespace}:`
    this.#stored = prefix === '' ? storedKey : (key) => prefix + storedKey(key)
    this.#onStoreError = guard.onStoreError
    this.#share = guard.onStoreError instanceof FallbackShare ? guard.onStoreError : undefined
    this.#deadlines = guard.deadlines
    this.#breaker = guard.breaker
    this.#warnings = guard.warnings
    this.#emit = guard.emit
  }

  /**
   * A consume of `cost` (a peek for PEEK) on the set `on`, as a decision. A synchronous store
   * (memory) is answered at once: no timer, no promise. Only asynchronous failures count towards
   * the breaker: a synchronous store has no wait to save, and a full MemoryStore's refusals of new
   * keys must not stop the limiting of the keys it holds.
   */
  decide(key: string, cost: number, on: PolicySet): Awaitable<Decision> {
    // A MemoryStore makes each outcome as its Decision entry: no copy per policy. Not for a set
    // whose calendar periods were resolved: its entries name the limiter's policies, not those.
    // Its consume is synchronous, so the answer is the entries themselves, and no breaker opens.
    if (on === this.#entriesFor && cost !== PEEK) {
      let entries: readonly PolicyDecision[]
      try {
        entries = consumeEntries(this.store as MemoryStore, this.#stored(key), on, cost)
      } catch (error) {
        return this.#failed(key, cost, on, error)
      }
      if (this.#failing) this.#recovered(false)
      return decisionOf(key, entries, 'store')
    }
    const breaker = this.#breaker
    if (breaker?.open) {
      if (!breaker.tryProbe()) return this.#failed(key, cost, on, breaker.openError(), true)
      return this.#asked(key, cost, on, true)
    }
    return this.#asked(key, cost, on, false)
  }

  /** `decide` on any store: its outcomes made into a decision; `probe`: the breaker's test of it. */
  #asked(key: string, cost: number, on: PolicySet, probe: boolean): Awaitable<Decision> {
    let answer: Awaitable<readonly Outcome[]>
    try {
      answer = this.#ask(this.store, key, cost, on)
    } catch (error) {
      const decided = this.#failed(key, cost, on, error)
      if (probe) this.#countFailure(probe, error)
      return decided
    }
    if (!isThenable(answer)) {
      if (this.#failing || probe) this.#recovered(probe)
      return this.#share === undefined
        ? toDecision(key, this.#policies, answer, 'store')
        : this.#shared(key, cost, on, answer as readonly Outcome[])
    }
    return (this.settle(answer) as Promise<readonly Outcome[]>).then(
      (outcomes) => {
        this.#recovered(probe)
        return this.#share === undefined
          ? toDecision(key, this.#policies, outcomes, 'store')
          : this.#shared(key, cost, on, outcomes)
      },
      (error: unknown) => {
        // The store error's event first, then the breaker's.
        const decided = this.#failed(key, cost, on, error)
        this.#countFailure(probe, error)
        return decided
      },
    )
  }

  /** The store's outcomes for `on` without consuming; failures reject (a read for display is not a decision). */
  async peek(key: string, on: PolicySet): Promise<readonly Outcome[]> {
    return this.settle(this.store.peek(this.#stored(key), on))
  }

  /** Resets the key's states of the set `on`. */
  async reset(key: string, on: PolicySet): Promise<void> {
    await this.settle(this.store.reset(this.#stored(key), on))
  }

  /** Gives back `cost` (see `Limiter.refund`), on a store that has `refund` (see `storeLacks`). */
  async refund(key: string, on: PolicySet, cost: number, admittedAt: number | undefined): Promise<void> {
    const refund = this.store.refund as NonNullable<Store['refund']>
    await this.settle(refund.call(this.store, this.#stored(key), on, cost, admittedAt))
  }

  /** Takes `cost` whatever the limits (see `Limiter.penalty`), on a store that has `penalize`. */
  async penalize(key: string, on: PolicySet, cost: number): Promise<void> {
    const penalize = this.store.penalize as NonNullable<Store['penalize']>
    await this.settle(penalize.call(this.store, this.#stored(key), on, cost))
  }

  /** Blocks the key for `ms` (see `Limiter.block`), on a store that has `block`. */
  async block(key: string, on: PolicySet, ms: number): Promise<void> {
    const block = this.store.block as NonNullable<Store['block']>
    await this.settle(block.call(this.store, this.#stored(key), on, ms))
  }

  /** The value itself when the store answered synchronously; otherwise the answer or a timeout. */
  settle<T>(answer: Awaitable<T>): Awaitable<T> {
    return isThenable(answer) ? this.#deadlines.settle(answer) : answer
  }

  /** Asks a store for a decision: a consume of `cost`, or a peek when cost is PEEK. */
  #ask(target: Store, key: string, cost: number, on: PolicySet): Awaitable<readonly Outcome[]> {
    return cost === PEEK ? target.peek(this.#stored(key), on) : target.consume(this.#stored(key), on, cost)
  }

  /**
   * The store's decision, told to the FallbackShare: what it admits counts against this process's
   * share; in the hold after a fault, a spent share denies it (the store may have come back empty).
   */
  #shared(key: string, cost: number, on: PolicySet, outcomes: readonly Outcome[]): Awaitable<Decision> {
    const share = this.#share as FallbackShare
    if (cost === PEEK || !outcomes.every((outcome) => outcome.allowed)) {
      return toDecision(key, this.#policies, outcomes, 'store')
    }
    const spent = share.admitted(this.#stored(key), on, cost, outcomes)
    const decide = (denied: readonly Outcome[] | undefined) =>
      denied === undefined
        ? toDecision(key, this.#policies, outcomes, 'store')
        : toDecision(key, this.#policies, denied, 'fallback')
    return isThenable(spent) ? Promise.resolve(spent).then(decide) : decide(spent)
  }

  /** The store answered: close a breaker this probe was testing, and say so when an outage ends. */
  #recovered(probe: boolean): void {
    const openMs = this.#breaker?.succeeded(probe)
    if (openMs !== undefined) this.#emit?.({ type: 'breaker-close', openMs })
    if (this.#failing) {
      this.#failing = false
      this.#warnings.storeRecovered()
    }
  }

  /** The store failed (`skipped`: the open breaker kept it from being asked): onStoreError decides. */
  async #failed(key: string, cost: number, on: PolicySet, error: unknown, skipped = false): Promise<Decision> {
    if (!skipped) this.#emit?.({ type: 'store-error', key, error })
    this.#failing = true
    const onStoreError = this.#onStoreError
    // Each warning is given once per limiter: a flapping store must not flood the log.
    this.#warnings.storeFailing(
      describeError(error),
      onStoreError === 'allow'
        ? "allowed without limits (onStoreError: 'allow')"
        : onStoreError === 'deny'
          ? "denied (onStoreError: 'deny')"
          : 'made by the fallback store (onStoreError)',
    )
    if (typeof onStoreError === 'object') {
      try {
        const outcomes = await this.settle(this.#ask(onStoreError, key, cost, on))
        return toDecision(key, this.#policies, outcomes, 'fallback', error)
      } catch (fallbackError) {
        const both = new AggregateError([error, fallbackError], 'the store and the fallback store both failed')
        return decisionWithout(key, this.#policies, false, 'error', both)
      }
    }
    return decisionWithout(key, this.#policies, onStoreError === 'allow', 'error', error)
  }

  /** An asynchronous failure or timeout counts towards the breaker; opening it is an event. */
  #countFailure(probe: boolean, error: unknown): void {
    const breaker = this.#breaker
    if (breaker?.failed(probe, error)) {
      this.#emit?.({ type: 'breaker-open', failures: breaker.failures, cooldownMs: breaker.cooldown, error })
    }
  }
}

/** The decision made without a store: every policy admits with its whole limit, or denies for a second. */
function decisionWithout(
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
