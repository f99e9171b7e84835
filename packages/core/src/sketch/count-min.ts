import { ConfigError } from '../diagnostics/errors.js'
import { KeyHasher } from './hash.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'

/**
 * A count-min sketch (pingora's `Estimator`): `hashes` rows of `slots` counters. A key adds to
 * one counter per row and reads the smallest, so an estimate is never below the key's true
 * count, and exceeds it by at most e/slots of all counts with probability 1 − e^-hashes.
 * Memory is fixed at `hashes · slots · 8` bytes however many keys arrive.
 *
 * Counters are float64: exact integers up to 2^53, so unlike pingora's wrapping isize there is
 * no overflow to handle.
 */
export class CountMinSketch {
  readonly hashes: number
  readonly slots: number
  readonly seed: number
  readonly #counters: Float64Array
  readonly #hasher: KeyHasher

  constructor(options: SketchShape) {
    const { hashes, slots, seed } = checkShape(options)
    this.hashes = hashes
    this.slots = slots
    this.seed = seed
    this.#counters = new Float64Array(hashes * slots)
    this.#hasher = new KeyHasher(hashes, slots, seed)
  }

  /** Bytes held by the counters. */
  get bytes(): number {
    return this.#counters.byteLength
  }

  /** Adds `n` to `key` and returns its new estimate. */
  incr(key: string, n = 1): number {
    checkCount('n', n)
    return this.incrCells(this.#hasher.cells(key), n)
  }

  /**
   * Takes back `n` that an earlier `incr` of the same key added (an in-flight request ending).
   * Only undo what was added: a decrement nobody added can make other keys read low.
   */
  decr(key: string, n = 1): number {
    checkCount('n', n)
    return this.incrCells(this.#hasher.cells(key), -n)
  }

  estimate(key: string): number {
    return this.estimateCells(this.#hasher.cells(key))
  }

  /**
   * The counters `key` maps to, so several sketches of the same shape and seed can share one
   * hashing (a rate estimator's two intervals, a store's windows). The array is reused by the
   * next call on this sketch: copy it to keep it.
   */
  cellsOf(key: string): Int32Array {
    return this.#hasher.cells(key)
  }

  /** `incr` for cells from `cellsOf` on a sketch of the same shape and seed. */
  incrCells(cells: Int32Array, n: number): number {
    const counters = this.#counters
    let min = Number.POSITIVE_INFINITY
    for (let row = 0; row < cells.length; row++) {
      const cell = cells[row] as number
      const value = (counters[cell] as number) + n
      counters[cell] = value
      if (value < min) min = value
    }
    return min
  }

  /** `estimate` for cells from `cellsOf` on a sketch of the same shape and seed. */
  estimateCells(cells: Int32Array): number {
    const counters = this.#counters
    let min = Number.POSITIVE_INFINITY
    for (let row = 0; row < cells.length; row++) {
      const value = counters[cells[row] as number] as number
      if (value < min) min = value
    }
    return min
  }

  /** Forgets every count. */
  reset(): void {
    this.#counters.fill(0)
  }

  /**
   * Adds `other`'s counts into this sketch, as if this one had seen both streams: estimates stay
   * at or above the summed true counts. Needs the same hashes, slots and seed.
   */
  merge(other: CountMinSketch): void {
    if (
      !(other instanceof CountMinSketch) ||
      other.hashes !== this.hashes ||
      other.slots !== this.slots ||
      other.seed !== this.seed
    ) {
      throw new ConfigError(
        'other',
        other,
        `must be a CountMinSketch with the same shape and seed (hashes ${this.hashes}, slots ${this.slots}, seed ${this.seed})`,
      )
    }
    const mine = this.#counters
    const theirs = other.#counters
    for (let i = 0; i < mine.length; i++) mine[i] = (mine[i] as number) + (theirs[i] as number)
  }
}
