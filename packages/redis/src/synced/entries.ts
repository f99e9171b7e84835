import type { Policy, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { PolicyCounters } from './counters.js'

/** One key under one policy set: a PolicyCounters per policy, in the set's order. */
export interface Entry {
  readonly counters: PolicyCounters[]
  /**
   * Passes of eviction's sweep the entry survives unused (see `Entries.evictOne`): each decision
   * after the first adds one, up to MAX_USES, each pass that evicts takes one. A key used once (a
   * flood's) goes at the sweep's first pass; a busy one outlasts MAX_USES passes without a decision.
   */
  used: number
}

/**
 * The store's entries by policy set, then key: a decision finds its entry with two lookups on
 * strings it already has, instead of building a joined id each time. Iteration and eviction go
 * set by set, each in insertion order.
 *
 * Counters are per key and policy id, not per set: two sets holding a policy of the same id (two
 * plans of one named policy, or one policy in two limiters) share one PolicyCounters, so a node
 * sends one running total per sub-window hash. A key's counters are found through its entries in
 * every set (sets are few: the limiters' policy sets), when an entry is made or for a set with no
 * entry of its own (peek, refund, reset); a map of them by key cost 40 bytes a key
 * (`pnpm bench:memory`, SyncedStore rows).
 */
export class Entries {
  readonly #bySet = new Map<string, Map<string, Entry>>()
  #size = 0
  #cursor: Generator<[Map<string, Entry>, string, Entry]> | undefined

  get size(): number {
    return this.#size
  }

  get(key: string, set: PolicySet): Entry | undefined {
    return this.#bySet.get(set.id)?.get(key)
  }

  /** The counters of `key` under policy id `id`, whichever set made them. */
  counters(key: string, id: string): PolicyCounters | undefined {
    for (const byKey of this.#bySet.values()) {
      const entry = byKey.get(key)
      const counters = entry === undefined ? undefined : withId(entry.counters, id)
      if (counters !== undefined) return counters
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
    const entry: Entry = {
      used: 0,
      counters: set.policies.map((policy) => {
        const counters = (shared ? this.counters(key, policy.id) : undefined) ?? make(policy)
        counters.holders++
        return counters
      }),
    }
    let byKey = this.#bySet.get(set.id)
    if (byKey === undefined) {
      byKey = new Map()
      this.#bySet.set(set.id, byKey)
    }
    byKey.set(key, entry)
    this.#size++
    return entry
  }

  /** Visits every entry: O(keys), for rare events only (Redis lost its keys). */
  visitAll(visit: (entry: Entry) => void): void {
    for (const byKey of this.#bySet.values()) for (const entry of byKey.values()) visit(entry)
  }

  /**
   * Visits up to `count` entries, going on where the last call stopped (a pass over all of them is
   * spread over many calls, so no call costs O(keys)), dropping those `visit` returns false for.
   */
  sweepSome(count: number, visit: (entry: Entry) => boolean): void {
    for (let i = 0; i < count; i++) {
      this.#cursor ??= this.#walk()
      const next = this.#cursor.next()
      if (next.done === true) {
        this.#cursor = undefined
        return
      }
      const [byKey, key, entry] = next.value
      if (visit(entry)) continue
      byKey.delete(key)
      this.#release(entry)
    }
  }

  /** Every entry with its map, set by set; Map iteration survives deleting the current key. */
  *#walk(): Generator<[Map<string, Entry>, string, Entry]> {
    for (const [id, byKey] of this.#bySet) {
      for (const [key, entry] of byKey) yield [byKey, key, entry]
      if (byKey.size === 0) this.#bySet.delete(id)
    }
  }

  /**
   * Drops one entry by a clock sweep over each set's entries: one with uses left (see
   * `Entry.used`), or that `keep` accepts, goes to the back of its set, so eviction goes by
   * recency and frequency of use and a kept entry is not looked at again before the others.
   * Returns the key dropped and the counters forgotten with it (those no other entry holds);
   * undefined when a whole turn found none to drop, and then the uses it passed are given back:
   * a turn over keys that cannot go yet (unsent counts) must not wear out a busy key's. With
   * `wear` (the store synced and still found none), turns go on until the uses are worn out.
   */
  evictOne(keep: (entry: Entry) => boolean, wear = false): { key: string; forgotten: PolicyCounters[] } | undefined {
    const passed: Entry[] = []
    const turns = wear ? MAX_USES + 1 : 1
    for (const [id, byKey] of this.#bySet) {
      for (let looked = 0, size = byKey.size; looked < turns * size; looked++) {
        const first = byKey.entries().next()
        if (first.done === true) break
        const [key, entry] = first.value
        byKey.delete(key)
        // A kept entry (unsent counts, limited) keeps its uses: only a pass that could drop it counts.
        if (keep(entry)) {
          byKey.set(key, entry)
          continue
        }
        if (entry.used > 0) {
          entry.used--
          passed.push(entry)
          byKey.set(key, entry)
          continue
        }
        const forgotten = this.#release(entry)
        if (byKey.size === 0) this.#bySet.delete(id)
        return { key, forgotten }
      }
    }
    if (!wear) for (const entry of passed) entry.used++
    return undefined
  }

  /** A dropped entry: counters no other entry holds are forgotten with it; those counters. */
  #release(entry: Entry): PolicyCounters[] {
    this.#size--
    const forgotten: PolicyCounters[] = []
    for (const counters of entry.counters) if (--counters.holders === 0) forgotten.push(counters)
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

/** The counters of policy id `id` among a key's few. */
function withId(all: readonly PolicyCounters[], id: string): PolicyCounters | undefined {
  for (const counters of all) if (counters.id === id) return counters
  return undefined
}
