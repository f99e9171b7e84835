/** Rows a chunk holds: a store grows by chunks, so at most one chunk's rows are spare. */
const CHUNK_BITS = 10
const CHUNK = 1 << CHUNK_BITS
const MASK = CHUNK - 1

/** How many columns of each kind a row has. */
export interface RowShape {
  readonly floats: number
  readonly ints?: number
  readonly bytes?: number
  /** Whether handles to rows outlive an await and so need generations (true unless said). */
  readonly generations?: boolean
}

/**
 * Rows of numbers in typed arrays, with no object per row: SyncedStore keeps every key's counts
 * here, since an object per sub-window and per key's policy held 5× what MemoryStore holds for the
 * same key (`pnpm bench:memory`, SyncedStore rows). Columns of one kind are interleaved in one
 * array per chunk of rows, so a row's numbers sit together; rows freed are reused first.
 *
 * A freed row's generation moves on: a handle made before (a sync or an exact call in flight)
 * sees it is stale by its generation, and must not write to a row that now holds another key.
 */
export class Slab {
  readonly #floats: number
  readonly #ints: number
  readonly #bytes: number
  readonly #generations: boolean
  readonly #f: Float64Array[] = []
  readonly #i: Int32Array[] = []
  readonly #b: Uint8Array[] = []
  readonly #gen: Uint32Array[] = []
  readonly #free: number[] = []
  #top = 0
  #live = 0

  constructor(shape: RowShape) {
    this.#floats = shape.floats
    this.#ints = shape.ints ?? 0
    this.#bytes = shape.bytes ?? 0
    this.#generations = shape.generations ?? true
  }

  /** Rows in use. */
  get size(): number {
    return this.#live
  }

  /** A row with every number 0. */
  alloc(): number {
    this.#live++
    const reused = this.#free.pop()
    if (reused !== undefined) {
      this.#clear(reused)
      return reused
    }
    const row = this.#top++
    if ((row & MASK) === 0) {
      this.#f.push(new Float64Array(CHUNK * this.#floats))
      this.#i.push(new Int32Array(CHUNK * this.#ints))
      this.#b.push(new Uint8Array(CHUNK * this.#bytes))
      if (this.#generations) this.#gen.push(new Uint32Array(CHUNK))
    }
    return row
  }

  /** Frees the row: its generation moves on, so handles to it are stale from now. */
  free(row: number): void {
    const gens = this.#gen[row >>> CHUNK_BITS]
    if (gens !== undefined) gens[row & MASK] = ((gens[row & MASK] as number) + 1) >>> 0
    this.#free.push(row)
    this.#live--
  }

  /** The row's generation: it moves on each time the row is freed (always 0 without generations). */
  gen(row: number): number {
    return this.#gen[row >>> CHUNK_BITS]?.[row & MASK] ?? 0
  }

  f(row: number, column: number): number {
    return (this.#f[row >>> CHUNK_BITS] as Float64Array)[(row & MASK) * this.#floats + column] as number
  }

  setF(row: number, column: number, value: number): void {
    const chunk = this.#f[row >>> CHUNK_BITS] as Float64Array
    chunk[(row & MASK) * this.#floats + column] = value
  }

  i(row: number, column: number): number {
    return (this.#i[row >>> CHUNK_BITS] as Int32Array)[(row & MASK) * this.#ints + column] as number
  }

  setI(row: number, column: number, value: number): void {
    const chunk = this.#i[row >>> CHUNK_BITS] as Int32Array
    chunk[(row & MASK) * this.#ints + column] = value
  }

  b(row: number, column: number): number {
    return (this.#b[row >>> CHUNK_BITS] as Uint8Array)[(row & MASK) * this.#bytes + column] as number
  }

  setB(row: number, column: number, value: number): void {
    const chunk = this.#b[row >>> CHUNK_BITS] as Uint8Array
    chunk[(row & MASK) * this.#bytes + column] = value
  }

  #clear(row: number): void {
    const at = row & MASK
    const chunk = row >>> CHUNK_BITS
    this.#f[chunk]?.fill(0, at * this.#floats, (at + 1) * this.#floats)
    this.#i[chunk]?.fill(0, at * this.#ints, (at + 1) * this.#ints)
    this.#b[chunk]?.fill(0, at * this.#bytes, (at + 1) * this.#bytes)
  }
}
