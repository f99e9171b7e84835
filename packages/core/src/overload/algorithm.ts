/**
 * What a limit algorithm sees once per sample window: the latencies of the work that finished
 * in it and how busy the limiter was.
 */
export interface LatencyWindow {
  /** Mean latency of the window's samples, ms. */
  readonly meanMs: number
  /** Samples in the window. */
  readonly samples: number
  /** Samples whose work was dropped (timed out, abandoned by an overloaded client). */
  readonly dropped: number
  /** The most work in flight at any admission of the window. */
  readonly maxInflight: number
}

/** One way of learning a limit: a new (unrounded) limit from the current one and a window. */
export interface LimitAlgorithm {
  update(limit: number, window: LatencyWindow): number
  /** A probe measured a new no-load latency: the algorithm forgets what it learned about latency before. */
  rebase(baselineMs: number): void
}

/** The work was app-limited: nothing to learn about the limit from a window that never came near it. */
export function appLimited(limit: number, window: LatencyWindow): boolean {
  return window.dropped === 0 && window.maxInflight < limit / 2
}
