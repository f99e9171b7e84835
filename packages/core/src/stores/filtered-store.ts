import type { Outcome } from '../algorithms/index.js'
import { ConfigError } from '../diagnostics/errors.js'
import { type AlgorithmName, type Policy, type PolicySet, parsePolicy, policySetOf } from '../policies/policy.js'
import { type Awaitable, andThen, type Store } from './contract.js'
import { SketchStore } from './sketch-store.js'

/** Options of `new FilteredStore(options)`. */
export interface FilteredStoreOptions {
  /** The exact store that keys reach once they pass the threshold (a MemoryStore, a RedisStore). */
  store: Store
  /** Units a key may take per window before it needs exact counting; below every policy's limit. */
  threshold: number
  /** Counts every key in fixed memory. Default `new SketchStore()`. Give each FilteredStore its own. */
  sketch?: SketchStore
}

interface Stages {
  /** The policies with limit = threshold, counted in the sketch. */
  readonly gate: PolicySet
  /** The policies with limit − threshold, enforced by the exact store. */
  readonly exact: PolicySet
  /** limit − threshold per policy. */
  readonly headroom: readonly number[]
}

/**
 * A first-stage filter (pingora's suggestion for exact counting): every key is counted in a
 * sketch, and only a key whose estimate passes `threshold` in some window reaches the exact
 * store, so the many low-frequency keys never allocate exact state.
 *
 * Never admits more than the limit, per policy and window (for one process):
 * - The sketch admits a request on its own only while estimate + cost ≤ threshold. Its estimate
 *   counts every request admitted by either stage and is never below the truth, so the requests
 *   admitted by the sketch stage weigh at most `threshold` in any window, and those admissions
 *   were within the limit anyway (threshold < limit).
 * - Past the threshold, the exact store enforces `limit − threshold` on what it admits, so the
 *   two stages together stay within `limit`. A key whose estimate is high because of collisions
 *   loses up to `threshold` of its quota: it is denied early, never late.
 *
 * With several processes in front of one shared exact store (Redis), each process's sketch
 * admits up to `threshold` on its own: the bound becomes limit + (processes − 1) · threshold.
 * Both stages should read the same clock; clocks apart by a window's fraction shift the window
 * edges between stages by as much.
 */
export class FilteredStore implements Store {
  readonly threshold: number
  /** What the sketch stage can count. */
  readonly algorithms: readonly AlgorithmName[]
  /** The sketch's estimates, and a request past the threshold counted in both stages: it denies early, never late. */
  readonly approximate = true
  readonly #store: Store
  readonly #sketch: SketchStore
  /** Per set object, not per set id: the sets of two plans of a named policy share an id (their limits differ). */
  readonly #stages = new WeakMap<PolicySet, Stages>()

  constructor(options: FilteredStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { store, threshold: 10 }')
    }
    const { store, threshold, sketch = new SketchStore() } = options
    if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 1) {
      throw new ConfigError('threshold', threshold, 'must be a positive whole number')
    }
    if (
      store === null ||
      typeof store !== 'object' ||
      typeof store.consume !== 'function' ||
      typeof store.peek !== 'function' ||
      typeof store.reset !== 'function'
    ) {
      throw new ConfigError('store', store, 'must be a store with consume, peek and reset methods')
    }
    if (!(sketch instanceof SketchStore)) throw new ConfigError('sketch', sketch, 'must be a SketchStore')
    this.threshold = threshold
    this.#store = store
    this.#sketch = sketch
    this.algorithms = sketch.algorithms.filter((name) => store.algorithms?.includes(name) ?? true)
  }

  consume(key: string, set: PolicySet, cost: number): Awaitable<readonly Outcome[]> {
    const { gate, exact, headroom } = this.#stagesOf(set)
    const first = this.#sketch.consume(key, gate, cost)
    if (first.every((outcome) => outcome.allowed)) return withHeadroom(first, headroom)
    return andThen(this.#store.consume(key, exact, cost), (outcomes) => {
      if (outcomes.every((outcome) => outcome.allowed)) this.#sketch.record(key, gate, cost)
      return outcomes
    })
  }

  peek(key: string, set: PolicySet): Awaitable<readonly Outcome[]> {
    const { gate, exact, headroom } = this.#stagesOf(set)
    const first = this.#sketch.peek(key, gate)
    if (first.every((outcome) => outcome.allowed)) return withHeadroom(first, headroom)
    return this.#store.peek(key, exact)
  }

  reset(key: string, set: PolicySet): Awaitable<void> {
    const { gate, exact } = this.#stagesOf(set)
    this.#sketch.reset(key, gate)
    return this.#store.reset(key, exact)
  }

  #stagesOf(set: PolicySet): Stages {
    let stages = this.#stages.get(set)
    if (stages === undefined) {
      const { threshold } = this
      for (const policy of set.policies) {
        if (threshold >= policy.limit) {
          throw new ConfigError(
            'threshold',
            threshold,
            `must be below every limit, and ${policy.name} allows ${policy.limit}`,
          )
        }
      }
      const gate = set.policies.map((policy) => withLimit(policy, threshold))
      const exact = set.policies.map((policy) => withLimit(policy, policy.limit - threshold))
      stages = {
        // Ids of their own, so stores shared by mistake with an unfiltered limiter keep counts apart.
        gate: policySetOf(gate, `filter:${set.id}`),
        exact: policySetOf(exact, `filter:${exact.map((p) => p.id).join('|')}`),
        headroom: set.policies.map((policy) => policy.limit - threshold),
      }
      this.#stages.set(set, stages)
    }
    return stages
  }
}

/** The same policy (window, algorithm, precision, name) with another limit. */
function withLimit(policy: Policy, limit: number): Policy {
  const { window, algorithm, name, precision } = policy
  return parsePolicy(
    algorithm === 'sliding-window' ? { limit, window, algorithm, name, precision } : { limit, window, algorithm, name },
  )
}

/** A sketch-stage outcome against the real limit: the exact stage still has `limit − threshold` to give. */
function withHeadroom(outcomes: readonly Outcome[], headroom: readonly number[]): Outcome[] {
  return outcomes.map((outcome, i) => ({ ...outcome, remaining: outcome.remaining + (headroom[i] as number) }))
}
