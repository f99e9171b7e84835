import { guard, type InflightGuard } from './inflight.js'
import { checkCount, checkShape, type SketchShape } from './shape.js'
import { SharedCountMinSketch } from './shared-count-min.js'

/**
 * `SketchInflightCounter` shared by worker threads: its sketch is a `SharedCountMinSketch`, so an
 * acquire in one thread is counted in every thread's `count` (pingora's `Inflight`, whose atomic
 * counters its connection limit shares between threads). A count may read high when keys
 * collide, never low. Make it in one thread, hand `buffer` to the others, open it there with
 * `SharedInflightCounter.from(buffer)`. Check-then-acquire is a race between threads: acquire,
 * then read the guard's `count` and release when it is over the limit (as `concurrencyLimit` does).
 */
export class SharedInflightCounter {
  readonly #sketch: SharedCountMinSketch

  /** A new counter of this shape (default 4 × 8192), or one over an existing shared sketch. */
  constructor(options: Partial<SketchShape> | SharedCountMinSketch = {}) {
    this.#sketch =
      options instanceof SharedCountMinSketch
        ? options
        : new SharedCountMinSketch(checkShape(options, { hashes: 4, slots: 8192 }))
  }

  /** Opens a counter another thread made, from its `buffer`. */
  static from(buffer: SharedArrayBuffer): SharedInflightCounter {
    return new SharedInflightCounter(SharedCountMinSketch.from(buffer))
  }

  /** The memory to hand to other threads. */
  get buffer(): SharedArrayBuffer {
    return this.#sketch.buffer
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
