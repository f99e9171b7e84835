import type { FixedWindowState, SlidingWindowState } from '../algorithms/index.js'
import type { Policy } from '../policies/policy.js'
import { CountMinSketch } from './count-min.js'
import type { SketchShape } from './shape.js'

/**
 * What a key had counted when it was reset, per ring slot: later estimates of the same
 * sub-window subtract it. Safe because counters only grow within a sub-window, and
 * min(a + d) ≥ min(a) + min(d), so an estimate minus the credit is still at least what the key
 * added since the reset.
 */
export interface Credit {
  readonly tags: Float64Array
  readonly amounts: Float64Array
}

/**
 * One fixed-window or sliding-window policy counted in sketches: one sketch per sub-window
 * still inside the window (1 for fixed-window, precision + 1 for sliding-window), reused
 * round-robin. A slot whose tag is not the sub-window asked for holds older counts: it reads
 * as 0 and is cleared when next written. Expects a clock that never steps back.
 */
export class WindowedSketch {
  readonly #size: number
  readonly #sliding: boolean
  readonly #ring: CountMinSketch[]
  /** The sub-window number (floor(time / size)) each ring slot holds; NaN when none. */
  readonly #tags: Float64Array

  constructor(policy: Policy, shape: Required<SketchShape>) {
    this.#sliding = policy.algorithm === 'sliding-window'
    this.#size = this.#sliding ? policy.window / policy.precision : policy.window
    const length = this.#sliding ? policy.precision + 1 : 1
    this.#ring = Array.from({ length }, () => new CountMinSketch(shape))
    this.#tags = new Float64Array(length).fill(Number.NaN)
  }

  get bytes(): number {
    return this.#ring.reduce((sum, sketch) => sum + sketch.bytes, 0)
  }

  /** The state the policy's transition would keep for the key, from estimates (never below truth). */
  state(cells: Int32Array, now: number, credit: Credit | undefined): FixedWindowState | SlidingWindowState {
    const current = Math.floor(now / this.#size)
    const start = current * this.#size
    if (!this.#sliding) return { start, count: this.#read(cells, current, credit) }
    const oldest = current - this.#ring.length + 1
    const counts = new Array<number>(this.#ring.length)
    for (let i = 0; i < counts.length; i++) counts[i] = this.#read(cells, oldest + i, credit)
    return { start, counts }
  }

  /** Counts `cost` for the key in the current sub-window. */
  add(cells: Int32Array, now: number, cost: number): void {
    const current = Math.floor(now / this.#size)
    const slot = this.#slotOf(current)
    const sketch = this.#ring[slot] as CountMinSketch
    if (this.#tags[slot] !== current) {
      sketch.reset()
      this.#tags[slot] = current
    }
    sketch.incrCells(cells, cost)
  }

  /** What the key has counted so far in every live sub-window, to subtract after a reset. */
  credit(cells: Int32Array): Credit {
    const amounts = new Float64Array(this.#ring.length)
    for (let slot = 0; slot < amounts.length; slot++) {
      amounts[slot] = (this.#ring[slot] as CountMinSketch).estimateCells(cells)
    }
    return { tags: this.#tags.slice(), amounts }
  }

  /** Whether a credit still applies to a sub-window inside the window. */
  isLive(credit: Credit, now: number): boolean {
    const oldest = Math.floor(now / this.#size) - this.#ring.length + 1
    return credit.tags.some((tag) => tag >= oldest)
  }

  #read(cells: Int32Array, index: number, credit: Credit | undefined): number {
    const slot = this.#slotOf(index)
    if (this.#tags[slot] !== index) return 0
    const count = (this.#ring[slot] as CountMinSketch).estimateCells(cells)
    return credit !== undefined && credit.tags[slot] === index ? count - (credit.amounts[slot] as number) : count
  }

  #slotOf(index: number): number {
    const length = this.#ring.length
    return ((index % length) + length) % length
  }
}
