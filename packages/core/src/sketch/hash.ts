/**
 * Seeded, non-cryptographic hashing of string keys to one counter per sketch row.
 *
 * One pass over the key feeds two 32-bit lanes with different constants (a murmur3 body and a
 * variant), so the pair behaves like a 64-bit hash. Each row's column is a 32-bit mix of
 * `h1 + row·h2`: two keys land together in every row only if their 64-bit pairs collide
 * (≈ 2^-64) or every row collides on its own (≈ slots^-hashes), which keeps the count-min
 * bound and pingora's 1/2^52 reasoning valid. Plain double hashing (`(h1 + row·h2) mod slots`)
 * would make a full collision ≈ slots^-2 whatever the number of rows.
 */
export class KeyHasher {
  readonly #rows: number
  readonly #slots: number
  readonly #seed1: number
  readonly #seed2: number
  readonly #cells: Int32Array
  readonly #lanes = new Int32Array(2)

  constructor(rows: number, slots: number, seed: number) {
    this.#rows = rows
    this.#slots = slots
    this.#seed1 = seed | 0
    // A second, different lane seed, derived so that one user seed still picks both.
    this.#seed2 = fmix32(seed ^ 0x5bd1e995)
    this.#cells = new Int32Array(rows)
  }

  /**
   * The flat index (row · slots + column) of `key`'s counter in each row. The array is reused
   * by the next call, so copy it to keep it.
   */
  cells(key: string): Int32Array {
    const lanes = hashLanes(key, this.#seed1, this.#seed2, this.#lanes)
    const h1 = lanes[0] as number
    const h2 = lanes[1] as number

    const cells = this.#cells
    const slots = this.#slots
    for (let row = 0; row < this.#rows; row++) {
      // Multiply-shift maps the mixed 32 bits onto [0, slots) without a division; the product
      // stays below slots · 2^32, so flooring never reaches `slots`.
      const mixed = fmix32((h1 + Math.imul(row, h2)) | 0) >>> 0
      cells[row] = row * slots + Math.floor(mixed * slots * 2.3283064365386963e-10)
    }
    return cells
  }
}

/**
 * `key`'s two 32-bit lanes from the seeds `h1` and `h2`, written into `out` (reused, so the hot
 * path allocates nothing): out[0] and out[1].
 */
export function hashLanes(key: string, h1: number, h2: number, out: Int32Array): Int32Array {
  const length = key.length
  let i = 0
  // Two UTF-16 code units per 32-bit block: every string maps to a distinct block sequence.
  for (; i + 1 < length; i += 2) {
    const block = key.charCodeAt(i) | (key.charCodeAt(i + 1) << 16)
    h1 = mixLane1(h1, block)
    h2 = mixLane2(h2, block)
  }
  if (i < length) {
    const block = key.charCodeAt(i)
    h1 = mixLane1(h1, block)
    h2 = mixLane2(h2, block)
  }
  out[0] = fmix32(h1 ^ length)
  out[1] = fmix32(h2 ^ length)
  return out
}

function mixLane1(h: number, block: number): number {
  let k = Math.imul(block, 0xcc9e2d51)
  k = (k << 15) | (k >>> 17)
  k = Math.imul(k, 0x1b873593)
  h ^= k
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

/** Different multipliers and rotations: a block difference that cancels in one lane need not in the other. */
function mixLane2(h: number, block: number): number {
  let k = Math.imul(block, 0x85ebca77)
  k = (k << 13) | (k >>> 19)
  k = Math.imul(k, 0xc2b2ae3d)
  h ^= k
  h = (h << 17) | (h >>> 15)
  return (Math.imul(h, 9) + 0x27d4eb2f) | 0
}

/** murmur3's finaliser: every input bit affects every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}
