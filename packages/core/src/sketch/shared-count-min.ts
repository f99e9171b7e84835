import { ConfigError } from '../diagnostics/errors.js'
import { KeyHasher } from './hash.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'

/** The largest value a shared counter holds: counters are 32-bit, so `Atomics.add` works on them. */
export const MAX_SHARED_COUNT = 0x7fff_ffff

/**
 * Words before the counters, the same for every shared structure: magic, kind, hashes, slots,
 * seed, then the kind's own words (the rate estimator's interval, tags and gates).
 */
export const SHARED_HEADER_WORDS = 16
const MAGIC = 0x534c_4331
const MAGIC_WORD = 0
const KIND_WORD = 1
const HASHES_WORD = 2
const SLOTS_WORD = 3
const SEED_WORD = 4

/** What a shared buffer holds (its kind word), so a buffer is never read as another structure. */
export const COUNT_MIN_KIND = 1
export const RATE_ESTIMATOR_KIND = 2

/** A new SharedArrayBuffer holding `banks` sketches of `shape` behind the header. */
export function createShared(kind: number, shape: Required<SketchShape>, banks: number): Int32Array {
  const words = new Int32Array(new SharedArrayBuffer((SHARED_HEADER_WORDS + banks * shape.hashes * shape.slots) * 4))
  words[MAGIC_WORD] = MAGIC
  words[KIND_WORD] = kind
  words[HASHES_WORD] = shape.hashes
  words[SLOTS_WORD] = shape.slots
  words[SEED_WORD] = shape.seed | 0
  return words
}

/** The header's shape of a buffer made by `createShared(kind, …, banks)`; a ConfigError for any other value. */
export function openShared(
  buffer: unknown,
  kind: number,
  banks: number,
  what: string,
): { words: Int32Array; shape: Required<SketchShape> } {
  if (!(buffer instanceof SharedArrayBuffer) || buffer.byteLength < SHARED_HEADER_WORDS * 4) {
    throw new ConfigError('buffer', buffer, `must be the SharedArrayBuffer of a ${what} (its .buffer)`)
  }
  const words = new Int32Array(buffer)
  const shape = {
    hashes: words[HASHES_WORD] as number,
    slots: words[SLOTS_WORD] as number,
    seed: (words[SEED_WORD] as number) >>> 0,
  }
  if (
    words[MAGIC_WORD] !== MAGIC ||
    words[KIND_WORD] !== kind ||
    buffer.byteLength !== (SHARED_HEADER_WORDS + banks * shape.hashes * shape.slots) * 4
  ) {
    throw new ConfigError('buffer', buffer, `must be the SharedArrayBuffer of a ${what} (its .buffer)`)
  }
  return { words, shape: checkShape(shape) }
}

/**
 * Adds `n` to `cells` of the bank at `base` atomically and returns the smallest new value.
 * A counter that would pass MAX_SHARED_COUNT takes back what this call added and throws.
 */
export function addCells(words: Int32Array, base: number, cells: Int32Array, n: number): number {
  let min = Number.POSITIVE_INFINITY
  for (let row = 0; row < cells.length; row++) {
    const value = Atomics.add(words, base + (cells[row] as number), n) + n
    if (value > MAX_SHARED_COUNT) {
      for (let undo = 0; undo <= row; undo++) Atomics.sub(words, base + (cells[undo] as number), n)
      throw new RangeError(`a shared sketch counter would pass ${MAX_SHARED_COUNT}`)
    }
    if (value < min) min = value
  }
  return min
}

/** The smallest of `cells` in the bank at `base`. */
export function readCells(words: Int32Array, base: number, cells: Int32Array): number {
  let min = Number.POSITIVE_INFINITY
  for (let row = 0; row < cells.length; row++) {
    const value = Atomics.load(words, base + (cells[row] as number))
    if (value < min) min = value
  }
  return min
}

/** Handed from `from` to the constructor: the buffer being opened instead of a new one. */
let opening: { words: Int32Array; shape: Required<SketchShape> } | undefined

/**
 * A count-min sketch whose counters live in a `SharedArrayBuffer` and change by `Atomics.add`
 * (pingora's `Estimator` with its `AtomicIsize`s): worker threads that open the same buffer count
 * into one sketch, without a lock and without messages. No update is lost, so every counter holds
 * exactly what the threads added to it and an estimate is never below a key's true count.
 *
 * Make it in one thread and hand `buffer` to the others (`workerData`, `postMessage`); each opens
 * it with `SharedCountMinSketch.from(buffer)`. Counters are 32-bit (up to 2,147,483,647 each; an
 * `incr` that would pass it throws a RangeError and adds nothing); memory is `hashes · slots · 4`
 * bytes plus a 64-byte header. In one thread the plain `CountMinSketch` is as fast or faster:
 * use this one only to share (see `bench/shared-memory.bench.ts`).
 */
export class SharedCountMinSketch {
  readonly hashes: number
  readonly slots: number
  readonly seed: number
  readonly #words: Int32Array
  readonly #hasher: KeyHasher

  constructor(options: SketchShape) {
    const opened = opening
    opening = undefined
    const shape = opened?.shape ?? checkShape(options)
    this.#words = opened?.words ?? createShared(COUNT_MIN_KIND, shape, 1)
    this.hashes = shape.hashes
    this.slots = shape.slots
    this.seed = shape.seed
    this.#hasher = new KeyHasher(shape.hashes, shape.slots, shape.seed)
  }

  /** Opens a sketch another thread made, from its `buffer`: both count into the same counters. */
  static from(buffer: SharedArrayBuffer): SharedCountMinSketch {
    opening = openShared(buffer, COUNT_MIN_KIND, 1, 'SharedCountMinSketch')
    return new SharedCountMinSketch(opening.shape)
  }

  /** The memory to hand to other threads. */
  get buffer(): SharedArrayBuffer {
    return this.#words.buffer as SharedArrayBuffer
  }

  /** Bytes held by the counters. */
  get bytes(): number {
    return this.hashes * this.slots * 4
  }

  /** Adds `n` to `key` and returns its new estimate. */
  incr(key: string, n = 1): number {
    checkCount('n', n)
    return this.incrCells(this.#hasher.cells(key), n)
  }

  /** Takes back `n` that an earlier `incr` of the same key added (in any thread). */
  decr(key: string, n = 1): number {
    checkCount('n', n)
    return this.incrCells(this.#hasher.cells(key), -n)
  }

  estimate(key: string): number {
    return this.estimateCells(this.#hasher.cells(key))
  }

  /** The counters `key` maps to; the array is reused by the next call on this object. */
  cellsOf(key: string): Int32Array {
    return this.#hasher.cells(key)
  }

  /** `incr` for cells from `cellsOf` (a negative `n` takes back). */
  incrCells(cells: Int32Array, n: number): number {
    return addCells(this.#words, SHARED_HEADER_WORDS, cells, n)
  }

  estimateCells(cells: Int32Array): number {
    return readCells(this.#words, SHARED_HEADER_WORDS, cells)
  }

  /** Forgets every count (counts other threads add meanwhile may be kept or dropped). */
  reset(): void {
    this.#words.fill(0, SHARED_HEADER_WORDS)
  }
}
