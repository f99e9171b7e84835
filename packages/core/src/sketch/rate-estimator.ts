import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'
import { CountMinSketch } from './count-min.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'

/** Options of `new RateEstimator(options)`: the sketch shape and the interval. */
export interface RateEstimatorOptions extends Partial<SketchShape> {
  /** Length of one interval: milliseconds or a duration string such as `'1s'`. */
  interval: number | string
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number
}

/** What a rate is computed from (pingora's `RateComponents`). */
export interface RateComponents {
  /** Estimated count in the previous interval (0 if that interval saw nothing or is long gone). */
  readonly previous: number
  /** Estimated count so far in the current interval. */
  readonly current: number
  /** Interval length in milliseconds. */
  readonly interval: number
  /** How much of the current interval has passed, from 0 to just under 1. */
  readonly fraction: number
}

/**
 * Events per second per key in bounded memory (pingora's `Rate`): two count-min sketches, one for
 * the current interval and one for the previous, swapped lazily when a call notices a new
 * interval (no timers). Defaults to pingora's 4 × 1024 counters per sketch.
 *
 * Unlike pingora, intervals are aligned to multiples of `interval` since the epoch, so the
 * previous interval always spans exactly one interval and every process agrees on the
 * boundaries. A clock that steps back is treated as standing still.
 */
export class RateEstimator {
  readonly interval: number
  readonly #now: () => number
  #current: CountMinSketch
  #previous: CountMinSketch
  /** Which interval `#current` holds: floor(time / interval). */
  #index = Number.NEGATIVE_INFINITY

  constructor(options: RateEstimatorOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { interval: "1s" }')
    }
    this.interval = toMilliseconds('interval', options.interval)
    const now = options.now ?? Date.now
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.#now = now
    const shape = checkShape(options, { hashes: 4, slots: 1024 })
    this.#current = new CountMinSketch(shape)
    this.#previous = new CountMinSketch(shape)
  }

  /** Bytes held by both sketches' counters. */
  get bytes(): number {
    return this.#current.bytes + this.#previous.bytes
  }

  /** Counts `n` events for `key` and returns its estimated count in the current interval. */
  observe(key: string, n = 1): number {
    checkCount('n', n)
    this.#advance()
    return this.#current.incr(key, n)
  }

  /** Events per second in the last complete interval (0 if it ended more than an interval ago). */
  rate(key: string): number {
    this.#advance()
    return (this.#previous.estimate(key) * 1000) / this.interval
  }

  /**
   * Cloudflare's sliding-window estimate: the previous interval weighted by the part of it that
   * still lies within one interval of now, plus the current one, per second:
   * `(previous · (1 − fraction) + current) / interval_seconds`.
   */
  proportionalRate(key: string): number {
    const { previous, current, fraction } = this.components(key)
    return ((previous * (1 - fraction) + current) * 1000) / this.interval
  }

  /** The counts behind a rate, for a custom estimate (pingora's `rate_with`). */
  components(key: string): RateComponents {
    const now = this.#advance()
    const cells = this.#current.cellsOf(key)
    return {
      previous: this.#previous.estimateCells(cells),
      current: this.#current.estimateCells(cells),
      interval: this.interval,
      fraction: (now - this.#index * this.interval) / this.interval,
    }
  }

  /** Forgets every count. */
  reset(): void {
    this.#current.reset()
    this.#previous.reset()
  }

  /** Rotates the sketches if the clock has entered a later interval; returns the effective time. */
  #advance(): number {
    const now = this.#now()
    const index = Math.floor(now / this.interval)
    if (index <= this.#index) return Math.max(now, this.#index * this.interval)
    if (index === this.#index + 1) {
      const ended = this.#current
      this.#current = this.#previous
      this.#previous = ended
      this.#current.reset()
    } else {
      // Two or more intervals passed: both hold stale counts.
      this.reset()
    }
    this.#index = index
    return now
  }
}
