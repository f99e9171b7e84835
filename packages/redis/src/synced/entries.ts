import type { Policy, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { Counts, PolicyCounters, PolicyShape } from './counters.js'
import { Slab } from './slab.js'

/**
 * Each set's entries. A key's slot holds its entry's row and uses (`row × USES + used`): a
 * one-policy set's entry is its counters' row itself; a larger set's is a row of `rows`, whose
 * columns are its counters' rows in the set's order (5 bytes a key less for one policy, where most
 * stores are: `pnpm bench:memory`, SyncedStore rows).
 */
interface SetEntries {
  readonly byKey: Map<string, number>
  /** Undefined for a one-policy set. */
  readonly rows: Slab | undefined
  /** The shapes of the set's policies, in order: an entry's counters' (rows hold only numbers). */
  readonly shapes: readonly PolicyShape[]
}

/** A slot counts uses up to MAX_USES below this. */
const USES = 4

/** One key under one policy set: a PolicyCounters per policy, in the set's order (a handle on its slot). */
export class Entry {
  readonly #byKey: Map<string, number>
  #slot: number

  constructor(
    readonly key: string,
    readonly counters: PolicyCounters[],
    byKey: Map<string, number>,
    slot: number,
  ) {
    this.#byKey = byKey
    this.#slot = slot
  }

  /**
   * Passes of eviction's sweep the entry survives unused (see `Entries.evictOne`): each decision
   * after the first adds one, up to MAX_USES, each pass that evicts takes one. A key used once (a
   * flood's) goes at the sweep's first pass; a busy one outlasts MAX_USES passes without a decision.
   */
  get used(): number {
    return this.#slot % USES
  }

  set used(used: number) {
    this.#slot += used - this.used
    this.#byKey.set(this.key, this.#slot)
  }
}

/**
 * The store's entries by policy set, then key: a decision finds its entry with two lookups on
 * strings it already has, instead of building a joined id each time. Iteration and eviction go
 * set by set, each in insertion order. The map gives a key's slot: no object per key (see `Counts`).
 *
 * Counters are per key and policy id, not per set: two sets holding a policy of the same id (two
 * plans of one named policy, or one policy in two limiters) share one PolicyCounters, so a node
 * sends one running total per sub-window hash. A key's counters are found through its entries in
 * every set (sets are few: the limiters' policy sets), when an entry is made or for a set with no
 * entry of its own (peek, refund, reset); a map of them by key cost 40 bytes a key
 * (`pnpm bench:memory`, SyncedStore rows).
 */
export class Entries {
  readonly #bySet = new Map<string, SetEntries>()
  #size = 0
  #cursor: Generator<[SetEntries, string, number]> | undefined

  constructor(readonly counts: Counts) {}

  get size(): number {
    return this.#size
  }

  get(key: string, set: PolicySet): Entry | undefined {
    const entries = this.#bySet.get(set.id)
    const slot = entries?.byKey.get(key)
    return slot === undefined ? undefined : this.#entry(entries as SetEntries, key, slot)
  }

  /** The counters of `key` under policy id `id`, whichever set made them. */
  counters(key: string, id: string): PolicyCounters | undefined {
    for (const entries of this.#bySet.values()) {
      const slot = entries.byKey.get(key)
      if (slot === undefined) continue
      const { shapes } = entries
      for (let i = 0; i < shapes.length; i++) {
        const shape = shapes[i] as PolicyShape
        if (shape.id === id) return this.counts.counters(countersRow(entries, slot, i), shape, key)
      }
    }
    return undefined
  }

  /**
   * Adds the entry of `key` under `set` (it has none): each policy's counters are those already
   * kept for the key and the policy's id, else made by `make`.
   */
  add(key: string, set: PolicySet, make: (policy: Policy) => PolicyCounters): Entry {
    // One set (the usual store) has no other entry of the key to share with.
    const shared = this.#bySet.size > 1 || !this.#bySet.has(set.id)
    const counters = set.policies.map((policy) => {
      const kept = (shared ? this.counters(key, policy.id) : undefined) ?? make(policy)
      kept.holders++
      return kept
    })
    let entries = this.#bySet.get(set.id)
    if (entries === undefined) {
      const rows =
        counters.length === 1 ? undefined : new Slab({ floats: 0, ints: counters.length, generations: false })
      entries = { byKey: new Map(), rows, shapes: counters.map((c) => c.shape) }
      this.#bySet.set(set.id, entries)
    }
    const { rows } = entries
    let row = (counters[0] as PolicyCounters).row
    if (rows !== undefined) {
      row = rows.alloc()
      for (const [i, c] of counters.entries()) rows.setI(row, i, c.row)
    }
    entries.byKey.set(key, row * USES)
    this.#size++
    return new Entry(key, counters, entries.byKey, row * USES)
  }

  /** Visits every entry: O(keys), for rare events only (Redis lost its keys). */
  visitAll(visit: (entry: Entry) => void): void {
    for (const entries of this.#bySet.values()) {
      for (const [key, slot] of entries.byKey) visit(this.#entry(entries, key, slot))
    }
  }

  /**
   * Visits up to `count` entries, going on where the last call stopped (a pass over all of them is
   * spread over many calls, so no call costs O(keys)), dropping those `visit` returns false for;
   * counters no other entry holds are forgotten with them.
   */
  sweepSome(count: number, visit: (entry: Entry) => boolean): void {
    for (let i = 0; i < count; i++) {
      this.#cursor ??= this.#walk()
      const next = this.#cursor.next()
      if (next.done === true) {
        this.#cursor = undefined
        return
      }
      const [entries, key, slot] = next.value
      if (visit(this.#entry(entries, key, slot))) continue
      entries.byKey.delete(key)
      for (const counters of this.#release(entries, key, slot)) this.counts.forget(counters)
    }
  }

  /** Every entry with its set's entries, set by set; Map iteration survives deleting the current key. */
  *#walk(): Generator<[SetEntries, string, number]> {
    for (const [id, entries] of this.#bySet) {
      for (const [key, slot] of entries.byKey) yield [entries, key, slot]
      if (entries.byKey.size === 0) this.#bySet.delete(id)
    }
  }

  /**
   * Drops one entry by a clock sweep over each set's entries: one with uses left (see
   * `Entry.used`), or that `keep` accepts, goes to the back of its set, so eviction goes by
   * recency and frequency of use and a kept entry is not looked at again before the others.
   * Returns the key dropped and the counters no other entry holds (the caller forgets them or
   * keeps them as ghosts); undefined when a whole turn found none to drop, and then the uses it
   * passed are given back: a turn over keys that cannot go yet (unsent counts) must not wear out a
   * busy key's. With `wear` (the store synced and still found none), turns go on until the uses
   * are worn out.
   */
  evictOne(keep: (entry: Entry) => boolean, wear = false): { key: string; forgotten: PolicyCounters[] } | undefined {
    const passed: [Map<string, number>, string][] = []
    const turns = wear ? MAX_USES + 1 : 1
    for (const [id, entries] of this.#bySet) {
      const { byKey } = entries
      for (let looked = 0, size = byKey.size; looked < turns * size; looked++) {
        const first = byKey.entries().next()
        if (first.done === true) break
        const [key, slot] = first.value
        byKey.delete(key)
        // A kept entry (unsent counts, limited) keeps its uses: only a pass that could drop it counts.
        if (keep(this.#entry(entries, key, slot))) {
          byKey.set(key, slot)
          continue
        }
        if (slot % USES > 0) {
          byKey.set(key, slot - 1)
          passed.push([byKey, key])
          continue
        }
        const forgotten = this.#release(entries, key, slot)
        if (byKey.size === 0) this.#bySet.delete(id)
        return { key, forgotten }
      }
    }
    if (!wear) for (const [byKey, key] of passed) byKey.set(key, (byKey.get(key) as number) + 1)
    return undefined
  }

  #entry(entries: SetEntries, key: string, slot: number): Entry {
    const { shapes } = entries
    const counters: PolicyCounters[] = []
    for (let i = 0; i < shapes.length; i++) {
      counters.push(this.counts.counters(countersRow(entries, slot, i), shapes[i] as PolicyShape, key))
    }
    return new Entry(key, counters, entries.byKey, slot)
  }

  /** A dropped entry's row is freed; the counters no other entry holds, returned. */
  #release(entries: SetEntries, key: string, slot: number): PolicyCounters[] {
    this.#size--
    const forgotten: PolicyCounters[] = []
    for (const counters of this.#entry(entries, key, slot).counters) {
      if (--counters.holders === 0) forgotten.push(counters)
    }
    entries.rows?.free(Math.floor(slot / USES))
    return forgotten
  }
}

/** The row of the `i`th counters of the entry in `slot`. */
function countersRow(entries: SetEntries, slot: number, i: number): number {
  const row = Math.floor(slot / USES)
  return entries.rows === undefined ? row : entries.rows.i(row, i)
}

/** Uses an entry keeps count of: a busy key outlasts this many passes of the sweep without a decision. */
export const MAX_USES = 3

/** The core algorithms' states of every policy of the entry at `now`: global estimates, or this node's own counts. */
export function statesOf(entry: Entry, now: number, own: boolean): unknown[] {
  return entry.counters.map((c) => c.stateAt(now, own))
}

/** Counts a local admission in every policy's current sub-window. */
export function countIn(entry: Entry, now: number, cost: number): void {
  for (const counters of entry.counters) counters.count(now, cost)
}

/** Marks denied here the current sub-window of every policy whose outcome denied. */
export function markDenied(entry: Entry, now: number, outcomes: readonly Outcome[]): void {
  for (const [i, counters] of entry.counters.entries()) {
    if (!(outcomes[i] as Outcome).allowed) counters.at(counters.currentStart(now)).deny()
  }
}
