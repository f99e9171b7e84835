import { ConfigError } from '../diagnostics/errors.js'

/** The dimensions and hashing of a count-min sketch. */
export interface SketchShape {
  /** Rows, each with its own hash: the chance of a bad estimate falls as e^-hashes. */
  hashes: number
  /** Counters per row: the error of an estimate is at most e/slots of all counts (usually). */
  slots: number
  /**
   * Picks the hash functions (a 32-bit integer, default 0). The default is public, so anyone can
   * search offline for keys that collide with a victim's; where keys are chosen by clients, pass
   * a secret per deployment, e.g. `crypto.getRandomValues(new Uint32Array(1))[0]` at startup.
   * Sketches merge only when their seeds match.
   */
  seed?: number
}

/** Beyond these a sketch is larger than the exact map it replaces for any realistic key count. */
export const MAX_HASHES = 16
export const MAX_SLOTS = 1 << 24

export function checkShape(options: unknown, defaults?: Partial<SketchShape>): Required<SketchShape> {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError('options', options, 'must be an object such as { hashes: 4, slots: 8192 }')
  }
  const given = options as Partial<SketchShape>
  const hashes = given.hashes ?? defaults?.hashes
  const slots = given.slots ?? defaults?.slots
  const seed = given.seed ?? 0
  if (typeof hashes !== 'number' || !Number.isInteger(hashes) || hashes < 1 || hashes > MAX_HASHES) {
    throw new ConfigError('hashes', hashes, `must be a whole number from 1 to ${MAX_HASHES}`)
  }
  if (typeof slots !== 'number' || !Number.isInteger(slots) || slots < 1 || slots > MAX_SLOTS) {
    throw new ConfigError('slots', slots, `must be a whole number from 1 to ${MAX_SLOTS}`)
  }
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
    throw new ConfigError('seed', seed, 'must be a whole number from 0 to 4294967295')
  }
  return { hashes, slots, seed }
}

/** Counts added at once must keep every counter an exact integer (below 2^53). */
export function checkCount(field: string, n: unknown): asserts n is number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new ConfigError(field, n, 'must be a whole number ≥ 0')
  }
}
