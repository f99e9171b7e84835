/** Rows a chunk holds: a slab grows and shrinks by chunks. */
const CHUNK_BITS = 10
export const CHUNK = 1 << CHUNK_BITS
const MASK = CHUNK - 1
/** The end of a chunk's list of free rows. */
const END = -1

/** How many columns of each kind a row has (at least one int: a free row links the next one there). */
export interface RowShape {
  readonly floats: number
  readonly ints: number
  readonly bytes?: number
  /** Whether handles to rows outlive an await and so need generations (true unless said). */
  readonly generations?: boolean
}

/** One chunk's columns, interleaved by kind, and its free rows. */
interface Chunk {
  readonly f: Float64Array
  readonly i: Int32Array
  readonly b: Uint8Array
  /** Rows in use. */
  live: number
  /** Rows from this one up were never used. */
  fresh: number
  /** The first of the rows freed, each linking the next in its int column 0. */
  freed: number
}

/**
 * Rows of numbers in typed arrays, with no object per row: SyncedStore keeps every key's counts
 * here, since an object per sub-window and per key's policy held 5× what MemoryStore holds for the
 * same key (`pnpm bench:memory`, SyncedStore rows). Columns of one kind are interleaved in one
 * array per chunk of rows, so a row's numbers sit together.
 *
 * A row is taken from the lowest chunk with room, so rows gather low and the chunks above empty
 * as keys go; an empty chunk's arrays are given back (one is kept spare, so a store that takes and
 * frees one row over and over does not make a chunk each time). Memory thus follows the rows in
 * use, as an object per row would after garbage collection.
 *
 * A freed row's generation moves on (generations outlive their chunk): a handle made before (a
 * sync or an exact call in flight) sees it is stale by its generation, and must not write to a row
 * that now holds another key.
 */
export class Slab {
  readonly #floats: number
  readonly #ints: number
  readonly #bytes: number
  readonly #generations: boolean
  readonly #chunks: (Chunk | undefined)[] = []
  readonly #gen: Uint32Array[] = []
  /** Places of chunks given back, highest first. */
  readonly #given: number[] = []
  /** No chunk below this one has room. */
  #lowest = 0
  /** An empty chunk kept rather than given back; -1 when none. */
  #spare = -1
  #live = 0

  constructor(shape: RowShape) {
    if (shape.ints < 1) throw new RangeError('a slab row needs an int column (free rows link through it)')
    this.#floats = shape.floats
    this.#ints = shape.ints
    this.#bytes = shape.bytes ?? 0
    this.#generations = shape.generations ?? true
  }

  /** Rows in use. */
  get size(): number {
    return this.#live
  }

  /** Chunks holding arrays (in use or the spare). */
  get chunks(): number {
    let held = 0
    for (const chunk of this.#chunks) if (chunk !== undefined) held++
    return held
  }

  /** A row with every number 0. */
  alloc(): number {
    const c = this.#roomAt()
    const chunk = this.#chunk(c)
    let at: number
    if (chunk.freed !== END) {
      at = chunk.freed
      chunk.freed = chunk.i[at * this.#ints] as number
      this.#clear(chunk, at)
    } else at = chunk.fresh++
    chunk.live++
    this.#live++
    if (c === this.#spare) this.#spare = -1
    return (c << CHUNK_BITS) | at
  }

  /** Frees the row: its generation moves on, so handles to it are stale from now. */
  free(row: number): void {
    const c = row >>> CHUNK_BITS
    const at = row & MASK
    const chunk = this.#chunks[c] as Chunk
    const gens = this.#gen[c]
    if (gens !== undefined) gens[at] = ((gens[at] as number) + 1) >>> 0
    chunk.i[at * this.#ints] = chunk.freed
    chunk.freed = at
    chunk.live--
    this.#live--
    if (c < this.#lowest) this.#lowest = c
    if (chunk.live > 0) return
    if (this.#spare === -1) {
      this.#spare = c
      return
    }
    this.#chunks[c] = undefined
    this.#given.push(c)
    this.#given.sort((a, b) => b - a)
  }

  /** The row's generation: it moves on each time the row is freed (always 0 without generations). */
  gen(row: number): number {
    return this.#gen[row >>> CHUNK_BITS]?.[row & MASK] ?? 0
  }

  f(row: number, column: number): number {
    return (this.#chunks[row >>> CHUNK_BITS] as Chunk).f[(row & MASK) * this.#floats + column] as number
  }

  setF(row: number, column: number, value: number): void {
    const chunk = this.#chunks[row >>> CHUNK_BITS] as Chunk
    chunk.f[(row & MASK) * this.#floats + column] = value
  }

  i(row: number, column: number): number {
    return (this.#chunks[row >>> CHUNK_BITS] as Chunk).i[(row & MASK) * this.#ints + column] as number
  }

  setI(row: number, column: number, value: number): void {
    const chunk = this.#chunks[row >>> CHUNK_BITS] as Chunk
    chunk.i[(row & MASK) * this.#ints + column] = value
  }

  b(row: number, column: number): number {
    return (this.#chunks[row >>> CHUNK_BITS] as Chunk).b[(row & MASK) * this.#bytes + column] as number
  }

  setB(row: number, column: number, value: number): void {
    const chunk = this.#chunks[row >>> CHUNK_BITS] as Chunk
    chunk.b[(row & MASK) * this.#bytes + column] = value
  }

  /** The lowest chunk with room: one holding arrays first, else the lowest place given back, else a new one. */
  #roomAt(): number {
    const chunks = this.#chunks
    for (let c = this.#lowest; c < chunks.length; c++) {
      const chunk = chunks[c]
      if (chunk !== undefined && (chunk.freed !== END || chunk.fresh < CHUNK)) {
        this.#lowest = c
        return c
      }
    }
    this.#lowest = this.#given.pop() ?? chunks.length
    return this.#lowest
  }

  #chunk(c: number): Chunk {
    const held = this.#chunks[c]
    if (held !== undefined) return held
    const chunk: Chunk = {
      f: new Float64Array(CHUNK * this.#floats),
      i: new Int32Array(CHUNK * this.#ints),
      b: new Uint8Array(CHUNK * this.#bytes),
      live: 0,
      fresh: 0,
      freed: END,
    }
    this.#chunks[c] = chunk
    if (this.#generations && this.#gen[c] === undefined) this.#gen[c] = new Uint32Array(CHUNK)
    return chunk
  }

  #clear(chunk: Chunk, at: number): void {
    chunk.f.fill(0, at * this.#floats, (at + 1) * this.#floats)
    chunk.i.fill(0, at * this.#ints, (at + 1) * this.#ints)
    chunk.b.fill(0, at * this.#bytes, (at + 1) * this.#bytes)
  }
}
