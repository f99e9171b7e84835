import { ConfigError } from '../diagnostics/errors.js'
import { fmix32, hashLanes } from './hash.js'

/** Scratch for `positionsOf`'s two lanes, so a lookup allocates nothing. */
const LANES = new Int32Array(2)

/** Bits per filter at most: Redis strings hold 2^32 bits, and positions are 32-bit. */
export const MAX_FILTER_BITS = 2 ** 32

/** Bits per filter at least (512 bytes): tiny filters make the estimate of a few clients jumpy. */
export const MIN_FILTER_BITS = 4096

/** The size of a Bloom filter for `capacity` keys at `falsePositiveRate`. */
export interface BloomShape {
  /** Bits per filter, a multiple of 64 (whole words for the sync, whole bytes for Redis). */
  readonly bits: number
  /** Positions set per key. */
  readonly hashes: number
}

/**
 * The textbook optimum: m = −n·ln p / (ln 2)², k = (m/n)·ln 2 = log2(1/p), which puts about half the bits
 * set at `capacity` keys; the false-positive rate is then (1 − e^(−k·n/m))^k ≈ p.
 */
export function bloomShape(capacity: unknown, falsePositiveRate: unknown): BloomShape {
  if (typeof capacity !== 'number' || !Number.isSafeInteger(capacity) || capacity < 1) {
    throw new ConfigError('capacity', capacity, 'must be a positive whole number of clients')
  }
  if (
    typeof falsePositiveRate !== 'number' ||
    !Number.isFinite(falsePositiveRate) ||
    falsePositiveRate <= 0 ||
    falsePositiveRate >= 0.5
  ) {
    throw new ConfigError('falsePositiveRate', falsePositiveRate, 'must be a number above 0 and below 0.5')
  }
  const optimal = (-capacity * Math.log(falsePositiveRate)) / Math.LN2 ** 2
  const bits = Math.max(MIN_FILTER_BITS, Math.ceil(optimal / 64) * 64)
  if (bits > MAX_FILTER_BITS) {
    throw new ConfigError(
      'capacity',
      capacity,
      `needs ${bits} bits per filter at falsePositiveRate ${falsePositiveRate}, above the ${MAX_FILTER_BITS} a filter can hold`,
    )
  }
  // k = log2(1/p), the optimum at the optimal m; a filter raised to the minimum keeps it, so small
  // capacities get a lower false-positive rate instead of dozens of positions per key.
  return { bits, hashes: Math.max(1, Math.round(-Math.log2(falsePositiveRate))) }
}

/**
 * The bit positions of a key: two 32-bit hash lanes over the key (as the count-min sketch), then
 * one mixed value per position mapped onto [0, bits) by multiply-shift, without a division.
 * Writes into and returns `out`, which the next call reuses.
 */
export function positionsOf(key: string, seed: number, bits: number, out: Float64Array): Float64Array {
  const lanes = hashLanes(key, seed | 0, fmix32(seed ^ 0x5bd1e995), LANES)
  const h1 = lanes[0] as number
  const h2 = lanes[1] as number
  for (let n = 0; n < out.length; n++) {
    const mixed = fmix32((h1 + Math.imul(n, h2)) | 0) >>> 0
    out[n] = Math.floor(mixed * bits * 2.3283064365386963e-10)
  }
  return out
}

/** Set bits of a 32-bit word. */
export function popcount32(word: number): number {
  let v = word - ((word >>> 1) & 0x55555555)
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333)
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff
}

/** Distinct keys behind `set` of `bits` bits with `hashes` positions each: −(m/k)·ln(1 − X/m). */
export function estimateCount(set: number, bits: number, hashes: number): number {
  if (set >= bits) return Number.POSITIVE_INFINITY
  return (-bits / hashes) * Math.log1p(-set / bits)
}
