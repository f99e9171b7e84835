import type { Outcome, PolicySet } from '@sluice/core'
import type { PolicyCounters } from './counters.js'

/** One key under one policy set: a PolicyCounters per policy, in the set's order. */
export interface Entry {
  readonly counters: PolicyCounters[]
}

/**
 * The store's entries by policy set, then key: a decision finds its entry with two lookups on
 * strings it already has, instead of building a joined id each time. Iteration and eviction go
 * set by set, each in insertion order.
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

  /** Adds or replaces the entry of `key` under `set`. */
  set(key: string, set: PolicySet, entry: Entry): void {
    let byKey = this.#bySet.get(set.id)
    if (byKey === undefined) {
      byKey = new Map()
      this.#bySet.set(set.id, byKey)
    }
    if (!byKey.has(key)) this.#size++
    byKey.set(key, entry)
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
      this.#size--
    }
  }

  /** Every entry with its map, set by set; Map iteration survives deleting the current key. */
  *#walk(): Generator<[Map<string, Entry>, string, Entry]> {
    for (const [id, byKey] of this.#bySet) {
      for (const [key, entry] of byKey) yield [byKey, key, entry]
      if (byKey.size === 0) this.#bySet.delete(id)
    }
  }

  /** Drops the first entry, in insertion order set by set, that `where` accepts; whether there was one. */
  dropFirst(where: (entry: Entry) => boolean): boolean {
    for (const [id, byKey] of this.#bySet) {
      for (const [key, entry] of byKey) {
        if (!where(entry)) continue
        byKey.delete(key)
        this.#size--
        if (byKey.size === 0) this.#bySet.delete(id)
        return true
      }
    }
    return false
  }
}

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
