import { appLimited, type LatencyWindow, type LimitAlgorithm } from './algorithm.js'

/** Vegas's settings (Netflix concurrency-limits' rules, thresholds in multiples of log10(limit)). */
export interface VegasOptions {
  /** Weight of each new limit against the current one. Default 1 (none). */
  smoothing?: number
}

const log10 = (limit: number): number => Math.max(1, Math.log10(limit))

/**
 * Vegas: the queue the limit implies, `limit × (1 − noLoad / latency)`, against thresholds that
 * grow with log10(limit): a short queue grows the limit fast, a long one shrinks it. The no-load
 * latency is the last probe's measure (without probes, the lowest window mean seen). Netflix
 * compares each sample with the lowest sample; a window's mean against the lowest sample reads
 * the spread of service times as a queue, so both sides here are typical latencies.
 */
export class Vegas implements LimitAlgorithm {
  readonly #smoothing: number
  #noLoadMs: number | undefined
  #probed = false

  constructor(options: Required<VegasOptions>) {
    this.#smoothing = options.smoothing
  }

  update(limit: number, window: LatencyWindow): number {
    if (this.#noLoadMs === undefined || (!this.#probed && window.meanMs < this.#noLoadMs)) {
      this.#noLoadMs = window.meanMs
      return limit
    }
    if (appLimited(limit, window)) return limit
    const step = log10(limit)
    const queue = Math.ceil(limit * (1 - this.#noLoadMs / window.meanMs))
    let next: number
    if (window.dropped > 0) next = limit - step
    else if (queue <= step) next = limit + 6 * step
    else if (queue < 3 * step) next = limit + step
    else if (queue > 6 * step) next = limit - step
    else return limit
    return limit * (1 - this.#smoothing) + next * this.#smoothing
  }

  rebase(baselineMs: number): void {
    this.#probed = true
    this.#noLoadMs = baselineMs
  }
}
