import { type AlgorithmState, type Outcome, step } from '../algorithms/index.js'
import type { AlgorithmName, Policy, PolicySet } from '../policies/policy.js'

/** A value, or a promise of it: stores answer synchronously when they can. */
export type Awaitable<T> = T | PromiseLike<T>

/** An answer is asynchronous when it is thenable: a Promise from any realm or promise library. */
export function isThenable<T>(value: Awaitable<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function'
}

/** `next(value)`: at once for a plain value (same tick, no promise), once fulfilled for a thenable. */
export function andThen<T, U>(value: Awaitable<T>, next: (value: T) => Awaitable<U>): Awaitable<U> {
  return isThenable(value) ? Promise.resolve(value).then(next) : next(value)
}

/**
 * For callback-style code (Express): `use(value)` at once for a plain value, once fulfilled for a
 * thenable. A rejection, a throw from `use`, or a rejection of the promise `use` returns goes to
 * `fail`, so nothing is left unhandled.
 */
export function whenReady<T>(value: Awaitable<T>, use: (value: T) => unknown, fail: (error: unknown) => void): void {
  if (isThenable(value)) {
    Promise.resolve(value).then(use).then(undefined, fail)
    return
  }
  let result: unknown
  try {
    result = use(value)
  } catch (error) {
    fail(error)
    return
  }
  if (isThenable(result)) result.then(undefined, fail)
}

/**
 * Where policy state lives. A store runs every policy of the set for the key and writes their
 * new states only if every one admits (all-or-nothing), atomically with respect to other
 * callers. A store that can answer synchronously should: the limiter then skips a timer.
 */
export interface Store {
  /**
   * The algorithms this store can serve; absent means all. `createLimiter` rejects a policy with
   * any other algorithm (a `ConfigError` naming it), so a mismatch shows at start-up, not at the
   * first request.
   */
  readonly algorithms?: readonly AlgorithmName[]
  /**
   * True when the store's fixed windows start at a policy's `offset` (the core transitions do),
   * so it serves calendar periods; `createLimiter` rejects a `period` on a store without it.
   */
  readonly calendarPeriods?: boolean
  /**
   * True when the store's fixed windows follow a policy's `start: 'first-request'` (each key's
   * window from its first request; the core transitions do); `createLimiter` rejects that option
   * on a store without it.
   */
  readonly firstRequestWindows?: boolean
  /**
   * True when the store follows a token bucket's or GCRA's `warmup` (a cold key admits less; the
   * core transitions do); `createLimiter` rejects that option on a store without it.
   */
  readonly warmup?: boolean
  /**
   * The algorithms whose named policies this store keeps across a change of limit (their usage
   * read against the new limit; see `PolicyOptions.name`); absent means all, as in a store that
   * runs the transitions. `createLimiter` rejects a named policy of any other algorithm (a
   * `ConfigError`), so a plan change never silently resets usage.
   */
  readonly namedAlgorithms?: readonly AlgorithmName[]
  /**
   * True when the store decides on estimates that may run above the true counts (count-min
   * sketches): it may deny before the transitions would, never admit what they deny. The
   * conformance suite then checks that bound instead of every outcome.
   */
  readonly approximate?: boolean
  consume(key: string, policies: PolicySet, cost: number): Awaitable<readonly Outcome[]>
  /** Reports without consuming (see `peekOutcome`). */
  peek(key: string, policies: PolicySet): Awaitable<readonly Outcome[]>
  reset(key: string, policies: PolicySet): Awaitable<void>
  /**
   * Gives back `cost` units that an admitted consume took, in every policy of the set, by each
   * algorithm's refund rule (see `Refund`): never creating state, never beyond a full quota,
   * never into a window that has passed. Optional: a store that cannot refund leaves it out,
   * and a limiter on it says so (`canRefund`).
   *
   * `admittedAt` (optional; stores may ignore it): when the refunded consume was admitted, in
   * epoch ms on this store's clock (`now()`, else `Date.now()`). Windowed algorithms then give
   * back only into the (sub-)window that consume counted in, never into a later one.
   */
  refund?(key: string, policies: PolicySet, cost: number, admittedAt?: number): Awaitable<void>
  /**
   * Takes `cost` units from every policy of the set whatever their limits (a penalty: a failed
   * login counted as ten), so the key may be denied until that has drained. Optional.
   */
  penalize?(key: string, policies: PolicySet, cost: number): Awaitable<void>
  /**
   * Blocks the key for `duration` ms from now in every policy of the set that has `blockFor`
   * (an existing longer block stays); other policies are left alone. Optional.
   */
  block?(key: string, policies: PolicySet, duration: number): Awaitable<void>
  /** The clock `admittedAt` is read on, epoch ms. Optional: without it the limiter uses `Date.now()`. */
  now?(): number
}

/** What `evaluate` returns for one request: the decision and the states to write if it was admitted. */
export interface Evaluation {
  readonly allowed: boolean
  readonly outcomes: Outcome[]
  /** The states to write, aligned with the policies; meaningful only when allowed. */
  readonly states: AlgorithmState[]
  /**
   * When denied: the indices of the policies whose denial starts a block (`blockFor`), whose
   * states must be written all the same. Undefined when there are none.
   */
  readonly blocks?: number[] | undefined
}

/**
 * Runs every policy's transition for one request: the shared heart of in-process stores. When any
 * policy denies, the others report their quota as it stands (a cost-0 step), since nothing is taken.
 * `shifts`, from a store that keeps each policy's states on its own time: added to `now` per policy.
 */
export function evaluate(
  states: readonly (AlgorithmState | undefined)[] | undefined,
  now: number,
  set: PolicySet,
  cost: number,
  shifts?: readonly number[],
): Evaluation {
  const { policies } = set
  const outcomes: Outcome[] = new Array(policies.length)
  const next: AlgorithmState[] = new Array(policies.length)
  let allowed = true
  let blocks: number[] | undefined
  for (let i = 0; i < policies.length; i++) {
    const result = step(states?.[i], timeOf(now, shifts, i), policies[i] as Policy, cost)
    outcomes[i] = result.outcome
    next[i] = result.state
    if (!result.outcome.allowed) allowed = false
    if (result.blocks) {
      blocks ??= []
      blocks.push(i)
    }
  }
  if (!allowed) {
    // Nothing is taken from any policy, so those that would have admitted report their quota untouched.
    for (let i = 0; i < policies.length; i++) {
      if ((outcomes[i] as Outcome).allowed) {
        outcomes[i] = step(states?.[i], timeOf(now, shifts, i), policies[i] as Policy, 0).outcome
      }
    }
  }
  return { allowed, outcomes, states: next, blocks: allowed ? undefined : blocks }
}

/** Policy `i`'s time: `now`, plus its shift when the store keeps each policy on its own (MemoryStore). */
function timeOf(now: number, shifts: readonly number[] | undefined, i: number): number {
  return shifts === undefined ? now : now + (shifts[i] as number)
}
