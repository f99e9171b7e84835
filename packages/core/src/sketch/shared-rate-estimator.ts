import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'
import { KeyHasher } from './hash.js'
import type { RateComponents } from './rate-estimator.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'
import {
  addCells,
  createShared,
  MAX_SHARED_COUNT,
  openShared,
  RATE_ESTIMATOR_KIND,
  readCells,
  SHARED_HEADER_WORDS,
} from './shared-count-min.js'

/** Options of `new SharedRateEstimator(options)`: as `RateEstimator`'s. */
export interface SharedRateEstimatorOptions extends Partial<SketchShape> {
  /** Length of one interval: whole milliseconds or a duration string such as `'1s'`. */
  interval: number | string
  /** This thread's clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number
}

const INTERVAL_WORD = 5
/** Per bank (two: even and odd intervals), the interval it holds, modulo 2^32. */
const TAG_WORD = 6
/** Per bank: 0 until first used, READY once open, CLEARING while one thread zeroes it for a new interval. */
const GATE_WORD = 8
const READY = 1
const CLEARING = 2

let opening: { words: Int32Array; shape: Required<SketchShape> } | undefined

/**
 * `RateEstimator` for worker threads: its two interval sketches live in one `SharedArrayBuffer`
 * and change by `Atomics.add`, so threads that open the buffer observe into and read the same
 * counts. Intervals are aligned to the epoch, so the threads agree on them; the even and odd
 * intervals each have a bank. The first thread to observe in a new interval claims the stale bank
 * (one compare-and-swap), zeroes it and opens it; a thread that arrives meanwhile waits for that
 * (zeroing `hashes · slots` counters, a few µs at the default 4 × 1024). A thread whose clock
 * reads earlier than the newest interval another opened counts into that one, as the per-isolate
 * estimator treats a clock stepping back. Counts are never read low: an event counted by a thread that
 * stalled across two whole intervals may land in a later one (read high).
 *
 * Counters are 32-bit (see `SharedCountMinSketch`); interval numbers are kept modulo 2^32.
 */
export class SharedRateEstimator {
  readonly interval: number
  readonly #now: () => number
  readonly #words: Int32Array
  readonly #hasher: KeyHasher
  readonly #bankWords: number

  constructor(options: SharedRateEstimatorOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { interval: "1s" }')
    }
    const now = options.now ?? Date.now
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.#now = now
    const opened = opening
    opening = undefined
    if (opened === undefined) {
      const interval = toMilliseconds('interval', options.interval)
      if (!Number.isInteger(interval) || interval < 1 || interval > MAX_SHARED_COUNT) {
        throw new ConfigError('interval', options.interval, `must be whole milliseconds from 1 to ${MAX_SHARED_COUNT}`)
      }
      const shape = checkShape(options, { hashes: 4, slots: 1024 })
      this.#words = createShared(RATE_ESTIMATOR_KIND, shape, 2)
      this.#words[INTERVAL_WORD] = interval
      this.#hasher = new KeyHasher(shape.hashes, shape.slots, shape.seed)
      this.#bankWords = shape.hashes * shape.slots
    } else {
      this.#words = opened.words
      this.#hasher = new KeyHasher(opened.shape.hashes, opened.shape.slots, opened.shape.seed)
      this.#bankWords = opened.shape.hashes * opened.shape.slots
    }
    this.interval = this.#words[INTERVAL_WORD] as number
  }

  /** Opens an estimator another thread made, from its `buffer`, with this thread's clock. */
  static from(buffer: SharedArrayBuffer, options: { now?: () => number } = {}): SharedRateEstimator {
    opening = openShared(buffer, RATE_ESTIMATOR_KIND, 2, 'SharedRateEstimator')
    return new SharedRateEstimator({ interval: 1, ...options })
  }

  /** The memory to hand to other threads. */
  get buffer(): SharedArrayBuffer {
    return this.#words.buffer as SharedArrayBuffer
  }

  /** Bytes held by both banks' counters. */
  get bytes(): number {
    return this.#bankWords * 2 * 4
  }

  /** Counts `n` events for `key` and returns its estimated count in the current interval. */
  observe(key: string, n = 1): number {
    checkCount('n', n)
    const bank = this.#open(this.#newest(Math.floor(this.#now() / this.interval) | 0))
    return addCells(this.#words, this.#base(bank), this.#hasher.cells(key), n)
  }

  /** Events per second in the last complete interval (0 if it ended more than an interval ago). */
  rate(key: string): number {
    return (this.components(key).previous * 1000) / this.interval
  }

  /** `(previous · (1 − fraction) + current) / interval_seconds`, as `RateEstimator`'s. */
  proportionalRate(key: string): number {
    const { previous, current, fraction } = this.components(key)
    return ((previous * (1 - fraction) + current) * 1000) / this.interval
  }

  /** The counts behind a rate (pingora's `rate_with`); reading changes nothing. */
  components(key: string): RateComponents {
    const now = this.#now()
    const clock = Math.floor(now / this.interval)
    const index = this.#newest(clock | 0)
    const behind = (index - (clock | 0)) | 0
    const cells = this.#hasher.cells(key)
    return {
      previous: this.#read(((index - 1) | 0) & 1, (index - 1) | 0, cells),
      current: this.#read(index & 1, index, cells),
      interval: this.interval,
      fraction: behind > 0 ? 0 : (now - clock * this.interval) / this.interval,
    }
  }

  /** Forgets every count (counts other threads add meanwhile may be kept or dropped). */
  reset(): void {
    this.#words.fill(0, SHARED_HEADER_WORDS)
  }

  #base(bank: number): number {
    return SHARED_HEADER_WORDS + bank * this.#bankWords
  }

  /** `index`, or the newest interval another thread opened when that is later (a clock behind stands still). */
  #newest(index: number): number {
    for (let bank = 0; bank < 2; bank++) {
      const tag = this.#tagIfReady(bank)
      if (tag !== undefined && ((tag - index) | 0) > 0) index = tag
    }
    return index
  }

  #tagIfReady(bank: number): number | undefined {
    return Atomics.load(this.#words, GATE_WORD + bank) === READY
      ? Atomics.load(this.#words, TAG_WORD + bank)
      : undefined
  }

  #read(bank: number, index: number, cells: Int32Array): number {
    return this.#tagIfReady(bank) === index ? readCells(this.#words, this.#base(bank), cells) : 0
  }

  /** The bank of `index`, opened for it (or for a later interval a faster thread opened meanwhile). */
  #open(index: number): number {
    const words = this.#words
    const bank = index & 1
    for (;;) {
      const gate = Atomics.load(words, GATE_WORD + bank)
      if (gate === CLEARING) continue
      if (gate === READY && ((Atomics.load(words, TAG_WORD + bank) - index) | 0) >= 0) return bank
      if (Atomics.compareExchange(words, GATE_WORD + bank, gate, CLEARING) !== gate) continue
      // Claimed. Another thread may have opened this interval between the reads and the claim.
      if (gate === READY && ((Atomics.load(words, TAG_WORD + bank) - index) | 0) >= 0) {
        Atomics.store(words, GATE_WORD + bank, READY)
        return bank
      }
      const base = this.#base(bank)
      words.fill(0, base, base + this.#bankWords)
      Atomics.store(words, TAG_WORD + bank, index)
      Atomics.store(words, GATE_WORD + bank, READY)
      return bank
    }
  }
}
