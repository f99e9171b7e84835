import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'
import { bloomShape, estimateCount, popcount32, positionsOf } from '../sketch/bloom.js'

/** How an `ActiveClients` ring is sized and clocked. */
export interface ActiveClientsOptions {
  /** Distinct clients expected in one window at most: the filters are sized for it. */
  capacity: number
  /** The chance that `has` says yes for a client never seen, at `capacity` clients. Default 0.001. */
  falsePositiveRate?: number
  /** How long a client stays known after its last request: ms or a duration string. Default '30min'. */
  window?: number | string
  /** Filters in the ring, one per `window / slots` of time (which must be whole ms). Default 30. */
  slots?: number
  /**
   * Picks the hash functions (a 32-bit integer, default 0). Nodes that merge must share it; where
   * clients choose their keys, a secret seed keeps them from crafting keys that read as known.
   */
  seed?: number
  /** Epoch milliseconds. Default `Date.now`. */
  now?: () => number
}

/**
 * What this node set in one slot since it last asked: the new bit positions, or the whole slot
 * when there are so many that its bits are the smaller message.
 */
export type SlotChanges = { readonly positions: Uint32Array } | { readonly bits: Uint8Array }

/** The Bloom filters' target false-positive rate unless `falsePositiveRate` says otherwise. */
export const DEFAULT_FALSE_POSITIVE_RATE = 0.001
/** How long a client counts as active by default: 30 minutes, the seed's session length. */
export const DEFAULT_ACTIVE_WINDOW = 30 * 60_000
/** Slots (Bloom filters) per window by default: one a minute over 30 minutes. */
export const DEFAULT_ACTIVE_SLOTS = 30
/** The most slots a window may have (one a minute over a day). */
export const MAX_ACTIVE_SLOTS = 1440
/** The filters together (slots + union) stay below this, so a typo cannot take the machine's memory. */
export const MAX_ACTIVE_CLIENTS_BYTES = 2 ** 30

const NO_SLOT = -1

/**
 * The clients seen in the last `window`, in constant memory: a ring of Bloom filters, one per
 * slot of the window (30 of 1 minute by default). A request's client goes into the current slot;
 * a slot is cleared when the ring comes round to it again, so a client is forgotten between
 * `window − window/slots` and `window` after its last request. `has` and `size` read the union
 * of the live slots, kept beside them (updated per bit on `add` and `mergeSlot`, rebuilt once
 * per slot when one expires), so neither scans the ring.
 *
 * Memory: (slots + 1) filters of `bits / 8` bytes, bits = −capacity·ln(p)/(ln 2)²: about
 * 1.8 bytes per client of capacity per filter at p = 0.001, so 31 × 1.8 MB = 56 MB for a
 * million clients over 30 slots, whatever the traffic. Beyond `capacity` it still works, with a
 * growing false-positive rate and an estimate that loses precision as the union fills up.
 *
 * Nodes combine their views with `exportSlot`/`mergeSlot` (bitwise OR, which cannot conflict);
 * `trackChanges` makes `takeChanges` return only what this node set since the last call, so a
 * sync sends what is new. No timers: time moves on `add`, `has`, `size` and the sync calls.
 */
export class ActiveClients {
  readonly capacity: number
  readonly falsePositiveRate: number
  readonly window: number
  readonly slots: number
  /** Milliseconds per slot. */
  readonly slotLength: number
  /** Bits per filter. */
  readonly bits: number
  /** Positions per client. */
  readonly hashes: number
  readonly seed: number
  readonly #now: () => number
  readonly #ring: Uint8Array[]
  readonly #ringWords: Uint32Array[]
  /** The absolute slot number (floor(time / slotLength)) each ring entry holds, or NO_SLOT. */
  readonly #held: Float64Array
  readonly #union: Uint8Array
  readonly #unionWords: Uint32Array
  #unionSet = 0
  /** The newest slot number seen; the clock never moves the ring backwards. */
  #current = Number.NEGATIVE_INFINITY
  readonly #positions: Float64Array
  /** The key whose positions #positions holds: middleware asks `has` then `add` for the same key. */
  #hashed: string | undefined
  /** Per ring entry, the positions set since the last takeChanges; null once it is cheaper to send the slot. */
  #changes: (Changes | null | undefined)[] | undefined

  constructor(options: ActiveClientsOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { capacity: 100000 }')
    }
    const {
      capacity,
      falsePositiveRate = DEFAULT_FALSE_POSITIVE_RATE,
      slots = DEFAULT_ACTIVE_SLOTS,
      seed = 0,
    } = options
    const { now = Date.now } = options
    const { bits, hashes } = bloomShape(capacity, falsePositiveRate)
    const window = toMilliseconds('window', options.window ?? DEFAULT_ACTIVE_WINDOW)
    if (typeof slots !== 'number' || !Number.isInteger(slots) || slots < 1 || slots > MAX_ACTIVE_SLOTS) {
      throw new ConfigError('slots', slots, `must be a whole number from 1 to ${MAX_ACTIVE_SLOTS}`)
    }
    if (!Number.isInteger(window / slots)) {
      throw new ConfigError('slots', slots, `must divide the window (${window} ms) into whole milliseconds`)
    }
    if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
      throw new ConfigError('seed', seed, 'must be a whole number from 0 to 4294967295')
    }
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    const bytes = ((slots + 1) * bits) / 8
    if (bytes > MAX_ACTIVE_CLIENTS_BYTES) {
      throw new ConfigError(
        'capacity',
        capacity,
        `needs ${bytes} bytes over ${slots} slots, above ${MAX_ACTIVE_CLIENTS_BYTES}: lower capacity or slots, or raise falsePositiveRate`,
      )
    }
    this.capacity = capacity
    this.falsePositiveRate = falsePositiveRate
    this.window = window
    this.slots = slots
    this.slotLength = window / slots
    this.bits = bits
    this.hashes = hashes
    this.seed = seed
    this.#now = now
    this.#ring = Array.from({ length: slots }, () => new Uint8Array(bits / 8))
    this.#ringWords = this.#ring.map((filter) => new Uint32Array(filter.buffer))
    this.#held = new Float64Array(slots).fill(NO_SLOT)
    this.#union = new Uint8Array(bits / 8)
    this.#unionWords = new Uint32Array(this.#union.buffer)
    this.#positions = new Float64Array(hashes)
  }

  /** Bytes held by the filters (slots and their union). */
  get bytes(): number {
    return ((this.slots + 1) * this.bits) / 8
  }

  /** Records a request from `key` in the current slot. */
  add(key: string): void {
    const current = this.#advance()
    const entry = this.#entryFor(current)
    const filter = this.#ring[entry] as Uint8Array
    const union = this.#union
    const changes = this.#changes
    const positions = this.#positionsOf(key)
    for (let i = 0; i < positions.length; i++) {
      const position = positions[i] as number
      const byte = position >>> 3
      const mask = 0x80 >>> (position & 7)
      if (((filter[byte] as number) & mask) !== 0) continue
      filter[byte] = (filter[byte] as number) | mask
      if (changes !== undefined) changes[entry] = recordChange(changes[entry], position, this.bits)
      if (((union[byte] as number) & mask) === 0) {
        union[byte] = (union[byte] as number) | mask
        this.#unionSet++
      }
    }
  }

  /** Whether `key` made a request within the window (false positives at about `falsePositiveRate`). */
  has(key: string): boolean {
    this.#advance()
    const union = this.#union
    const positions = this.#positionsOf(key)
    for (let i = 0; i < positions.length; i++) {
      const position = positions[i] as number
      if (((union[position >>> 3] as number) & (0x80 >>> (position & 7))) === 0) return false
    }
    return true
  }

  /** Estimated distinct clients within the window, from the bits set in the union of the slots. */
  size(): number {
    this.#advance()
    return estimateCount(this.#unionSet, this.bits, this.hashes)
  }

  /** The slot requests go into now (an absolute number: floor(time / slotLength)). */
  currentSlot(): number {
    return this.#advance()
  }

  /** The absolute numbers of the slots inside the window, oldest first. */
  liveSlots(): number[] {
    const current = this.#advance()
    return Array.from({ length: this.slots }, (_, i) => current - this.slots + 1 + i)
  }

  /** A copy of a live slot's bits (Redis's bit order: bit 0 is the high bit of byte 0); undefined otherwise. */
  exportSlot(slot: number): Uint8Array | undefined {
    const entry = this.#liveEntry(slot)
    return entry === undefined ? undefined : (this.#ring[entry] as Uint8Array).slice()
  }

  /**
   * ORs another node's bits for `slot` into this one (shorter input is zero-padded, as Redis
   * returns a string only as long as its highest set bit). Bits merged in are not this node's
   * changes. Returns false, merging nothing, for a slot outside the window.
   */
  mergeSlot(slot: number, bits: Uint8Array): boolean {
    const current = this.#advance()
    if (!Number.isInteger(slot) || slot > current || slot <= current - this.slots) return false
    if (!(bits instanceof Uint8Array) || bits.length > this.bits / 8) {
      throw new ConfigError('bits', bits, `must be a Uint8Array of at most ${this.bits / 8} bytes`)
    }
    const filter = this.#ring[this.#entryFor(slot)] as Uint8Array
    const union = this.#union
    let added = 0
    for (let i = 0; i < bits.length; i++) {
      const incoming = bits[i] as number
      if (incoming === 0) continue
      filter[i] = (filter[i] as number) | incoming
      const fresh = incoming & ~(union[i] as number)
      if (fresh !== 0) {
        union[i] = (union[i] as number) | fresh
        added += popcount32(fresh)
      }
    }
    this.#unionSet += added
    return true
  }

  /**
   * ORs every live slot of `other` (another process's view, the same shape and seed) into this
   * one, as if this one had seen its clients too.
   */
  merge(other: ActiveClients): void {
    if (
      !(other instanceof ActiveClients) ||
      other.bits !== this.bits ||
      other.hashes !== this.hashes ||
      other.seed !== this.seed ||
      other.slotLength !== this.slotLength
    ) {
      throw new ConfigError(
        'other',
        other,
        `must be an ActiveClients of the same shape (bits ${this.bits}, hashes ${this.hashes}, slotLength ${this.slotLength}) and seed`,
      )
    }
    for (const slot of other.liveSlots()) {
      const bits = other.exportSlot(slot)
      if (bits !== undefined) this.mergeSlot(slot, bits)
    }
  }

  /** From now on remember which bits this node sets, for `takeChanges`. */
  trackChanges(): void {
    this.#changes ??= new Array(this.slots).fill(undefined)
  }

  /** Marks every live slot as changed in full: the next takeChanges sends whole slots (after a lost sync). */
  markAllChanged(): void {
    this.trackChanges()
    this.#changes?.fill(null)
  }

  /** What this node set in `slot` since the last call (see trackChanges); undefined when nothing. */
  takeChanges(slot: number): SlotChanges | undefined {
    const entry = this.#liveEntry(slot)
    const changes = this.#changes
    if (entry === undefined || changes === undefined) return undefined
    const pending = changes[entry]
    changes[entry] = undefined
    if (pending === undefined) return undefined
    if (pending === null) return { bits: (this.#ring[entry] as Uint8Array).slice() }
    return { positions: pending.list.slice(0, pending.length) }
  }

  #positionsOf(key: string): Float64Array {
    if (key !== this.#hashed) {
      positionsOf(key, this.seed, this.bits, this.#positions)
      this.#hashed = key
    }
    return this.#positions
  }

  /** Moves the ring to the clock's slot, clearing slots that left the window; returns the current slot. */
  #advance(): number {
    const slot = Math.floor(this.#now() / this.slotLength)
    if (slot <= this.#current) return this.#current
    this.#current = slot
    let cleared = false
    for (let entry = 0; entry < this.slots; entry++) {
      const held = this.#held[entry] as number
      if (held !== NO_SLOT && held <= slot - this.slots) {
        ;(this.#ring[entry] as Uint8Array).fill(0)
        this.#held[entry] = NO_SLOT
        if (this.#changes !== undefined) this.#changes[entry] = undefined
        cleared = true
      }
    }
    if (cleared) this.#rebuildUnion()
    return slot
  }

  /** The ring entry of a live slot, claiming it (empty) if it holds nothing yet. */
  #entryFor(slot: number): number {
    const entry = slot % this.slots
    if (this.#held[entry] !== slot) {
      this.#held[entry] = slot
      // A markAllChanged from before this slot began does not make its first bits a whole-slot send.
      if (this.#changes !== undefined) this.#changes[entry] = undefined
    }
    return entry
  }

  #liveEntry(slot: number): number | undefined {
    this.#advance()
    const entry = ((slot % this.slots) + this.slots) % this.slots
    return this.#held[entry] === slot ? entry : undefined
  }

  /** Once per slot at most: ORs the live slots word by word and counts the bits. */
  #rebuildUnion(): void {
    const union = this.#unionWords
    union.fill(0)
    for (let entry = 0; entry < this.slots; entry++) {
      if (this.#held[entry] === NO_SLOT) continue
      const words = this.#ringWords[entry] as Uint32Array
      for (let i = 0; i < union.length; i++) union[i] = (union[i] as number) | (words[i] as number)
    }
    let set = 0
    for (let i = 0; i < union.length; i++) set += popcount32(union[i] as number)
    this.#unionSet = set
  }
}

interface Changes {
  list: Uint32Array
  length: number
}

/**
 * Appends a position, growing the list by doubling; null (send the whole slot) once the
 * positions, 4 bytes each, would pass a 32nd of the slot's bytes.
 */
function recordChange(changes: Changes | null | undefined, position: number, bits: number): Changes | null {
  if (changes === null) return null
  const limit = Math.max(16, bits / 256)
  const pending = changes ?? { list: new Uint32Array(Math.min(64, limit)), length: 0 }
  if (pending.length >= limit) return null
  if (pending.length === pending.list.length) {
    const grown = new Uint32Array(Math.min(limit, pending.list.length * 2))
    grown.set(pending.list)
    pending.list = grown
  }
  pending.list[pending.length++] = position
  return pending
}
