/** What one worker process does (see worker.ts). */
export interface WorkerPlan {
  url: string
  prefix: string
  nodeId: string
  interval: number
  algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket' | 'gcra'
  limit: number
  window: number
  /** Requests per second this process offers to each pattern it runs. */
  rates: Partial<Record<Pattern, number>>
  duration: number
  seed: number
  progress?: boolean
  exactAbove?: number
  /** Keys the spread pattern cycles through. Default KEYS. */
  keys?: number
  /** Milliseconds after "go" before this process offers anything. Default 0. */
  delay?: number
  /** The store's maxKeys. Default the store's. */
  maxKeys?: number
  /** Report when (epoch ms, asked) each hot-key request was admitted: `admittedAt`. */
  record?: boolean
  /**
   * The client settings the package README recommends for faults (no offline queue, one retry,
   * reconnect every 50 ms), so a dead Redis fails calls at once. Default ioredis's own.
   */
  recommended?: boolean
  /** The store's lease sizes. Default the store's. */
  lease?: { allocation?: number; cap?: number }
  /** Patterns offered only from when the worker reads `release` on stdin (after `go`), at their rate from then. */
  held?: Pattern[]
}

/** One hot key; 1000 keys in turn; 1000 keys drawn by Zipf (s = 1); a new key each request (a flood). */
export type Pattern = 'hot' | 'spread' | 'zipf' | 'flood'

export const KEYS = 1000

/** The key sequence of a pattern (deterministic per seed). */
export function keysOf(pattern: Pattern, seed: number): () => number {
  if (pattern === 'hot') return () => 0
  if (pattern === 'flood') {
    let n = 0
    return () => n++
  }
  if (pattern === 'spread') {
    let i = seed % KEYS
    return () => {
      i = (i + 1) % KEYS
      return i
    }
  }
  const cumulative: number[] = []
  let sum = 0
  for (let k = 1; k <= KEYS; k++) {
    sum += 1 / k
    cumulative.push(sum)
  }
  let state = seed >>> 0 || 1
  const random = () => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 2 ** 32
  }
  return () => {
    const target = random() * sum
    let lo = 0
    let hi = KEYS - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if ((cumulative[mid] as number) < target) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}
