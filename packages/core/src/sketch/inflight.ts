import { CountMinSketch } from './count-min.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'

/** One acquired slot. Release it when the work ends, however it ends (`try … finally`). */
export interface InflightGuard {
  readonly key: string
  /** In flight for the key right after this acquire, this one included. */
  readonly count: number
  /** Ends this slot. Only the first call counts, so a close and an error handler may both call it. */
  release(): void
}

/**
 * What counts work in flight for `concurrencyLimit({ counter })`: `InflightCounter` (exact, the
 * default), `SketchInflightCounter` (fixed memory) or `SharedInflightCounter` (shared by threads).
 */
export interface InflightCounting {
  /** Counts `n` more in flight for `key`; the guard's `count` includes them. */
  acquire(key: string, n?: number): InflightGuard
  count(key: string): number
}

/**
 * Exact count of work in flight per key (pingora's `Inflight`, with a guard object standing in
 * for Rust's `Drop`). Memory is one map entry per key with work in flight; a key whose count
 * returns to 0 is forgotten.
 */
export class InflightCounter {
  readonly #counts = new Map<string, number>()

  /** Keys with work in flight. */
  get size(): number {
    return this.#counts.size
  }

  /** Counts `n` units in flight for `key` until the guard is released. */
  acquire(key: string, n = 1): InflightGuard {
    checkCount('n', n)
    const counts = this.#counts
    const count = (counts.get(key) ?? 0) + n
    counts.set(key, count)
    return guard(key, count, () => {
      const left = (counts.get(key) as number) - n
      if (left > 0) counts.set(key, left)
      else counts.delete(key)
    })
  }

  count(key: string): number {
    return this.#counts.get(key) ?? 0
  }
}

/**
 * `InflightCounter` in fixed memory: counts live in a count-min sketch (default pingora's 4 × 8192),
 * so a count may read high when keys collide, never low. The guard keeps the key's counter
 * positions rather than the key, and takes back exactly what it added.
 */
export class SketchInflightCounter {
  readonly #sketch: CountMinSketch

  constructor(options: Partial<SketchShape> = {}) {
    this.#sketch = new CountMinSketch(checkShape(options, { hashes: 4, slots: 8192 }))
  }

  /** Bytes held by the sketch's counters. */
  get bytes(): number {
    return this.#sketch.bytes
  }

  acquire(key: string, n = 1): InflightGuard {
    checkCount('n', n)
    const sketch = this.#sketch
    const cells = sketch.cellsOf(key).slice()
    return guard(key, sketch.incrCells(cells, n), () => sketch.incrCells(cells, -n))
  }

  count(key: string): number {
    return this.#sketch.estimate(key)
  }
}

/** A guard whose release undoes the acquire on its first call only. */
export function guard(key: string, count: number, undo: () => void): InflightGuard {
  let released = false
  return {
    key,
    count,
    release() {
      if (released) return
      released = true
      undo()
    },
  }
}
