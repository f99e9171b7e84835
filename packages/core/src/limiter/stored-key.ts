import { hashLanes } from '../sketch/hash.js'

/**
 * The longest key a store is given as it is, in UTF-16 code units. A longer key (a bearer token,
 * a header a client filled) is stored as its first 240 units, `#` and 16 hex digits of a 64-bit
 * hash of the whole key: 257 units, longer than any key stored as it is, so the mapping stays
 * one-to-one except where two keys with the same first 240 units share the hash (about
 * n² / 2^65 for n such keys: 3 in 10^8 for a million). The hash is not cryptographic: a client
 * that writes its own key could craft one that shares another's count, so key on credentials
 * only once they are verified.
 */
export const MAX_KEY_LENGTH = 256

const KEPT = 240
const lanes = new Int32Array(2)
const units = new Uint16Array(KEPT)

/** `key` as a store sees it: the same when it is at most MAX_KEY_LENGTH long, else bounded and hashed. */
export function storedKey(key: string): string {
  if (key.length <= MAX_KEY_LENGTH) return key
  // Fixed seeds: every process of a fleet must map a key to the same stored key.
  hashLanes(key, 0x736c7569, 0x63652121, lanes)
  return `${copyOfStart(key)}#${hex32(lanes[0] as number)}${hex32(lanes[1] as number)}`
}

/**
 * The key's first KEPT code units as a string of their own. `key.slice` would not do: V8 keeps a
 * slice as a view of its parent, so each stored key would hold the whole long key in memory
 * (measured: 5 000 keys of 100 KB kept 502 MB of heap through their slices).
 */
function copyOfStart(key: string): string {
  for (let i = 0; i < KEPT; i++) units[i] = key.charCodeAt(i)
  return String.fromCharCode(...units)
}

function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0')
}
