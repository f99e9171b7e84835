import { appLimited, type LatencyWindow, type LimitAlgorithm } from './algorithm.js'

/** AIMD's settings. */
export interface AimdOptions {
  /** The factor applied to the limit on a congested window. Default 0.9. */
  backoff?: number
  /** A window is congested when its mean latency exceeds this multiple of the no-load latency. Default 1.5. */
  tolerance?: number
}

/**
 * AIMD: the limit grows by one each window its work came near it, and is multiplied by `backoff`
 * each window that dropped work or ran slower than `tolerance` × the no-load latency (the last
 * probe's measure; without probes, the lowest window mean seen).
 */
export class Aimd implements LimitAlgorithm {
  readonly #backoff: number
  readonly #tolerance: number
  #noLoadMs: number | undefined
  #probed = false

  constructor(options: Required<AimdOptions>) {
    this.#backoff = options.backoff
    this.#tolerance = options.tolerance
  }

  update(limit: number, window: LatencyWindow): number {
    if (this.#noLoadMs === undefined || (!this.#probed && window.meanMs < this.#noLoadMs))
      this.#noLoadMs = window.meanMs
    if (window.dropped > 0 || window.meanMs > this.#tolerance * this.#noLoadMs) return limit * this.#backoff
    return appLimited(limit, window) ? limit : limit + 1
  }

  rebase(baselineMs: number): void {
    this.#probed = true
    this.#noLoadMs = baselineMs
  }
}
