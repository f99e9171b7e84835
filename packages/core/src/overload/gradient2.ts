import { appLimited, type LatencyWindow, type LimitAlgorithm } from './algorithm.js'

/** Gradient2's settings (Netflix concurrency-limits' names and defaults, the queue allowance √limit). */
export interface Gradient2Options {
  /** How far the short-term latency may exceed the long-term one before the limit falls. Default 1.3. */
  tolerance?: number
  /** Weight of each new limit against the current one. Default 0.2. */
  smoothing?: number
  /** Samples the long-term latency averages over (an exponential average). Default 600. */
  longWindow?: number
}

/**
 * Gradient2: the ratio of long-term to short-term latency is the gradient; below 1 the limit
 * shrinks in proportion (never by more than half), and a queue allowance of √limit lets it grow
 * while latency holds. After a long slow period the long-term latency is pulled down towards the
 * short-term one. One departure from Netflix's: the long-term latency never exceeds the no-load
 * latency the last probe measured, because under sustained overload an average of every sample
 * learns the queueing as normal and the limit climbs without end (seen in bench:overload); a
 * dependency that became slower for good is learned at the next probe.
 */
export class Gradient2 implements LimitAlgorithm {
  readonly #tolerance: number
  readonly #smoothing: number
  readonly #longWindow: number
  #longMs: number | undefined
  #longSamples = 0
  #baselineMs = Number.POSITIVE_INFINITY

  constructor(options: Required<Gradient2Options>) {
    this.#tolerance = options.tolerance
    this.#smoothing = options.smoothing
    this.#longWindow = options.longWindow
  }

  update(limit: number, window: LatencyWindow): number {
    const shortMs = window.meanMs
    const longMs = Math.min(this.#baselineMs, this.#addLong(shortMs, window.samples))
    this.#longMs = longMs
    // Latency back to normal after a long overload: do not wait for the average to forget it.
    if (longMs / shortMs > 2) this.#longMs = longMs * 0.95
    if (appLimited(limit, window)) return limit
    const gradient = Math.max(0.5, Math.min(1, (this.#tolerance * longMs) / shortMs))
    const next = limit * gradient + Math.sqrt(limit)
    return limit * (1 - this.#smoothing) + next * this.#smoothing
  }

  rebase(baselineMs: number): void {
    this.#baselineMs = baselineMs
    this.#longMs = baselineMs
    this.#longSamples = this.#longWindow
  }

  /** The long-term average: a plain mean while warming up (its first 10 % of samples), then exponential. */
  #addLong(ms: number, samples: number): number {
    const warmup = Math.max(1, Math.round(this.#longWindow / 10))
    if (this.#longMs === undefined) {
      this.#longMs = ms
      this.#longSamples = samples
    } else if (this.#longSamples < warmup) {
      const total = this.#longSamples + samples
      this.#longMs = (this.#longMs * this.#longSamples + ms * samples) / total
      this.#longSamples = total
    } else {
      const weight = Math.min(1, (2 * samples) / (this.#longWindow + 1))
      this.#longMs = this.#longMs * (1 - weight) + ms * weight
      this.#longSamples += samples
    }
    return this.#longMs
  }
}
