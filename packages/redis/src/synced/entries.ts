import type { Policy, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { Counts, PolicyCounters, PolicyShape } from './counters.js'
import { Slab } from './slab.js'

/** Each set's entries: the row of each key's entry, whose columns are its counters' rows, in the set's order. */
interface SetEntries {
  readonly byKey: Map<string, number>
  readonly rows: Slab
  /** The shapes of the set's policies, in order: an entry's counters' (rows hold only numbers). */
  readonly shapes: readonly PolicyShape[]
}

/** An entry's byte column: see `Entry.used`. */
const USED = 0

/** One key under one policy set: a PolicyCounters per policy, in the set's order (a handle on its row). */
export class Entry {
  constructor(
    readonly key: string,
    readonly counters: PolicyCounters[],
    readonly rows: Slab,
    readonly row: number,
  ) {}

  /**
   * Passes of eviction's sweep the entry survives unused (see `Entries.evictOne`): each decision
   * after the first adds one, up to MAX_USES, each pass that evicts takes one. A key used once (a
   * flood's) goes at the sweep's first pass; a busy one outlasts MAX_USES passes without a decision.
   */
  get used(): number {
    return this.rows.b(this.row, USED)
  }

  set used(used: number) {
    this.rows.setB(this.row, USED, used)
  }
}

/**
 * The store's entries by policy set, then key: a decision finds its entry with two lookups on
 * strings it already has, instead of building a joined id each time. Iteration and eviction go
 * set by set, each in insertion order. An entry is a row of a slab per set (its counters' rows),
 * the map giving the row: no object per key (see `Counts`).
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
    const row = entries?.byKey.get(key)
    return row === undefined ? undefined : this.#entry(entries as SetEntries, key, row)
  }

  /** The counters of `key` under policy id `id`, whichever set made them. */
  counters(key: string, id: string): PolicyCounters | undefined {
    for (const { byKey, rows, shapes } of this.#bySet.values()) {
      const row = byKey.get(key)
      if (row === undefined) continue
      for (const [i, shape] of shapes.entries()) {
        if (shape.id === id) return this.counts.counters(rows.i(row, i), shape, key)
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
      const rows = new Slab({ floats: 0, ints: counters.length, bytes: 1, generations: false })
      entries = { byKey: new Map(), rows, shapes: counters.map((c) => c.shape) }
      this.#bySet.set(set.id, entries)
    }
    const row = entries.rows.alloc()
    for (const [i, c] of counters.entries()) entries.rows.setI(row, i, c.row)
    entries.byKey.set(key, row)
    this.#size++
    return new Entry(key, counters, entries.rows, row)
  }

  /** Visits every entry: O(keys), for rare events only (Redis lost its keys). */
  visitAll(visit: (entry: Entry) => void): void {
    for (const entries of this.#bySet.values()) {
      for (const [key, row] of entries.byKey) visit(this.#entry(entries, key, row))
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
      const [entries, key, row] = next.value
      if (visit(this.#entry(entries, key, row))) continue
      entries.byKey.delete(key)
      for (const counters of this.#release(entries, key, row)) this.counts.forget(counters)
    }
  }

  /** Every entry with its set's entries, set by set; Map iteration survives deleting the current key. */
  *#walk(): Generator<[SetEntries, string, number]> {
    for (const [id, entries] of this.#bySet) {
      for (const [key, row] of entries.byKey) yield [entries, key, row]
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
    const passed: Entry[] = []
    const turns = wear ? MAX_USES + 1 : 1
    for (const [id, entries] of this.#bySet) {
      const { byKey } = entries
      for (let looked = 0, size = byKey.size; looked < turns * size; looked++) {
        const first = byKey.entries().next()
        if (first.done === true) break
        const [key, row] = first.value
        byKey.delete(key)
        const entry = this.#entry(entries, key, row)
        // A kept entry (unsent counts, limited) keeps its uses: only a pass that could drop it counts.
        if (keep(entry)) {
          byKey.set(key, row)
          continue
        }
        if (entry.used > 0) {
          entry.used--
          passed.push(entry)
          byKey.set(key, row)
          continue
        }
        const forgotten = this.#release(entries, key, row)
        if (byKey.size === 0) this.#bySet.delete(id)
        return { key, forgotten }
      }
    }
    if (!wear) for (const entry of passed) entry.used++
    return undefined
  }

  #entry(entries: SetEntries, key: string, row: number): Entry {
    const { rows, shapes } = entries
    const counters: PolicyCounters[] = []
    for (const [i, shape] of shapes.entries()) counters.push(this.counts.counters(rows.i(row, i), shape, key))
    return new Entry(key, counters, rows, row)
  }

  /** A dropped entry's row is freed; the counters no other entry holds, returned. */
  #release(entries: SetEntries, key: string, row: number): PolicyCounters[] {
    this.#size--
    const forgotten: PolicyCounters[] = []
    for (const counters of this.#entry(entries, key, row).counters)
      if (--counters.holders === 0) forgotten.push(counters)
    entries.rows.free(row)
    return forgotten
  }
}

/** Uses an entry keeps count of: a busy key outlasts this many passes of the sweep without a decision. */
export const MAX_USES = 3

/** The core algorithms' states of every policy of the entry at `now`: global estimates, or this node's own counts. */
export function statesOf(entry: Entry, now: number, own: boolean): unknown[] {
  return entry.counters.map((c) => c.stateAt(now, own))
}

/** Counts a local admission in every policy's current sub-window. */
export function countIn(entry: Entry, now: number, cost: number): void {
  for (const counters of entry.counters) counters.at(counters.currentStart(now)).count(cost)
}

/** Marks denied here the current sub-window of every policy whose outcome denied. */
export function markDenied(entry: Entry, now: number, outcomes: readonly Outcome[]): void {
  for (const [i, counters] of entry.counters.entries()) {
    if (!(outcomes[i] as Outcome).allowed) counters.at(counters.currentStart(now)).deny()
  }
}
