import type { Policy, PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import type { PolicyCounters } from './counters.js'

/** One key under one policy set: a PolicyCounters per policy, in the set's order. */
export interface Entry {
  readonly counters: PolicyCounters[]
}

/**
 * The store's entries by policy set, then key: a decision finds its entry with two lookups on
 * strings it already has, instead of building a joined id each time. Iteration and eviction go
 * set by set, each in insertion order.
 *
 * Counters are per key and policy id, not per set: two sets holding a policy of the same id (two
 * plans of one named policy, or one policy in two limiters) share one PolicyCounters, so a node
 * sends one running total per sub-window hash. Entries are the fast path to them; `#byPolicy`
 * finds them when an entry is made, or for a set with no entry of its own (peek, refund, reset).
 */
export class Entries {
  readonly #bySet = new Map<string, Map<string, Entry>>()
  readonly #byPolicy = new Map<string, Map<string, PolicyCounters>>()
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
    return this.#byPolicy.get(id)?.get(key)
  }

  /**
   * Adds the entry of `key` under `set` (it has none): each policy's counters are those already
   * kept for the key and the policy's id, else made by `make`.
   */
  add(key: string, set: PolicySet, make: (policy: Policy) => PolicyCounters): Entry {
    const entry: Entry = {
      counters: set.policies.map((policy) => {
        let byKey = this.#byPolicy.get(policy.id)
        if (byKey === undefined) {
          byKey = new Map()
          this.#byPolicy.set(policy.id, byKey)
        }
        let counters = byKey.get(key)
        if (counters === undefined) {
          counters = make(policy)
          byKey.set(key, counters)
        }
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
      this.#release(key, entry)
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
        this.#release(key, entry)
        if (byKey.size === 0) this.#bySet.delete(id)
        return true
      }
    }
    return false
  }

  /** A dropped entry: counters no other entry holds are forgotten with it. */
  #release(key: string, entry: Entry): void {
    this.#size--
    for (const counters of entry.counters) {
      if (--counters.holders > 0) continue
      const byKey = this.#byPolicy.get(counters.id)
      byKey?.delete(key)
      if (byKey?.size === 0) this.#byPolicy.delete(counters.id)
    }
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
