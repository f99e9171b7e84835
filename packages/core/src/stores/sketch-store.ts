import { type AlgorithmState, type Outcome, peekOutcome } from '../algorithms/index.js'
import { ConfigError } from '../diagnostics/errors.js'
import type { AlgorithmName, PolicySet } from '../policies/policy.js'
import { KeyHasher } from '../sketch/hash.js'
import { checkShape, type SketchShape } from '../sketch/shape.js'
import { type Credit, WindowedSketch } from '../sketch/windowed-sketch.js'
import { evaluate, type Store } from './contract.js'

/** Options of `new SketchStore(options)`: the sketch shape and the clock. */
export interface SketchStoreOptions extends Partial<SketchShape> {
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number
}

interface SetState {
  readonly windows: readonly WindowedSketch[]
  /** Keys reset while their counts are still inside a window: what to subtract, per policy. */
  readonly credits: Map<string, readonly Credit[]>
}

const WINDOW_ALGORITHMS: readonly AlgorithmName[] = Object.freeze(['fixed-window', 'sliding-window'])

/** Stale credits looked at per reset: keeps them trim without a timer. */
const SWEEP_PER_RESET = 2

/**
 * A store whose memory is fixed however many keys arrive: fixed-window and sliding-window
 * counts live in count-min sketches (default 4 × 16384 counters, 512 KiB per sub-window), and
 * the same transitions as `MemoryStore` decide from the estimates. An estimate is never below
 * the key's true count, so the store may deny early when keys collide, never admit more than
 * an exact store would. Other algorithms need per-key state: a `ConfigError` at first use.
 *
 * `reset(key)` cannot take one key's counts out of shared counters; it records what the key had
 * counted and subtracts that from its later estimates in the same windows.
 */
export class SketchStore implements Store {
  /** Counts in shared cells have no per-key state for the other algorithms. */
  readonly algorithms = WINDOW_ALGORITHMS
  /** Keys that share cells count each other's requests: an estimate is never below the truth. */
  readonly approximate = true
  readonly #shape: Required<SketchShape>
  readonly #hasher: KeyHasher
  readonly #now: () => number
  readonly #sets = new Map<string, SetState>()
  #latest = Number.NEGATIVE_INFINITY

  constructor(options: SketchStoreOptions = {}) {
    this.#shape = checkShape(options, { hashes: 4, slots: 16384 })
    const now = options.now ?? Date.now
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.#now = now
    this.#hasher = new KeyHasher(this.#shape.hashes, this.#shape.slots, this.#shape.seed)
  }

  /** Bytes held by every sketch's counters so far (they are allocated per policy set on first use). */
  get bytes(): number {
    let sum = 0
    for (const { windows } of this.#sets.values()) for (const window of windows) sum += window.bytes
    return sum
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] {
    const now = this.#time()
    const { windows, credits } = this.#stateOf(set)
    const cells = this.#hasher.cells(key)
    const result = evaluate(this.#states(windows, credits, key, cells, now), now, set, cost)
    if (result.allowed) for (const window of windows) window.add(cells, now, cost)
    return result.outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] {
    const now = this.#time()
    const { windows, credits } = this.#stateOf(set)
    const states = this.#states(windows, credits, key, this.#hasher.cells(key), now)
    return set.policies.map((policy, i) => peekOutcome(states[i], now, policy))
  }

  /**
   * Counts `cost` for the key in every policy without deciding: for a stage that admitted a
   * request elsewhere (see `FilteredStore`).
   */
  record(key: string, set: PolicySet, cost: number): void {
    const now = this.#time()
    const cells = this.#hasher.cells(key)
    for (const window of this.#stateOf(set).windows) window.add(cells, now, cost)
  }

  reset(key: string, set: PolicySet): void {
    const now = this.#time()
    const { windows, credits } = this.#stateOf(set)
    const cells = this.#hasher.cells(key)
    credits.delete(key)
    let looked = 0
    for (const [other, credit] of credits) {
      if (looked++ === SWEEP_PER_RESET) break
      if (!isLive(windows, credit, now)) credits.delete(other)
    }
    credits.set(
      key,
      windows.map((window) => window.credit(cells)),
    )
  }

  #states(
    windows: readonly WindowedSketch[],
    credits: Map<string, readonly Credit[]>,
    key: string,
    cells: Int32Array,
    now: number,
  ): AlgorithmState[] {
    let credit = credits.size === 0 ? undefined : credits.get(key)
    if (credit !== undefined && !isLive(windows, credit, now)) {
      credits.delete(key)
      credit = undefined
    }
    return windows.map((window, i) => window.state(cells, now, credit?.[i]))
  }

  #stateOf(set: PolicySet): SetState {
    let state = this.#sets.get(set.id)
    if (state === undefined) {
      const windows = set.policies.map((policy, i) => {
        if (policy.algorithm !== 'fixed-window' && policy.algorithm !== 'sliding-window') {
          throw new ConfigError(
            `limits[${i}].algorithm`,
            policy.algorithm,
            'must be fixed-window or sliding-window for a SketchStore (other algorithms keep state per key)',
          )
        }
        return new WindowedSketch(policy, this.#shape)
      })
      state = { windows, credits: new Map() }
      this.#sets.set(set.id, state)
    }
    return state
  }

  /** Rotation assumes time moves forward: a clock that steps back is treated as standing still. */
  #time(): number {
    const now = this.#now()
    if (now > this.#latest) this.#latest = now
    return this.#latest
  }
}

function isLive(windows: readonly WindowedSketch[], credit: readonly Credit[], now: number): boolean {
  return windows.some((window, i) => window.isLive(credit[i] as Credit, now))
}
