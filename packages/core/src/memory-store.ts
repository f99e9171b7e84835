import { type AlgorithmState, type Outcome, peekOutcome } from './algorithms/index.js'
import { ConfigError, StoreFullError } from './errors.js'
import type { PolicySet } from './policy.js'
import { evaluate, type Store } from './store.js'

export interface MemoryStoreOptions {
  /** Keys tracked at most, across every limiter using this store. Default 100 000. */
  maxKeys?: number
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  now?: () => number
}

interface Entry {
  states: AlgorithmState[]
  /** When every policy is back to full quota: the entry can then be forgotten. */
  expiresAt: number
  /** A limited key is never evicted before this, or a flood of new keys would unblock it. */
  protectedUntil: number
}

/** Expired entries looked at per new key: keeps memory trim without a timer. */
const SWEEP_PER_INSERT = 2

/**
 * Keeps state in this process, in a Map per policy set. No timers: entries expire lazily and a
 * few of the oldest are swept on every new key. When `maxKeys` is reached the oldest key that
 * is not currently limited is evicted; if every key is limited the store throws
 * `StoreFullError`, which the limiter's `onStoreError` turns into a decision.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number
  readonly #now: () => number
  readonly #sets = new Map<string, Map<string, Entry>>()
  #size = 0

  constructor(options: MemoryStoreOptions = {}) {
    const { maxKeys = 100_000, now = Date.now } = options
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigError('maxKeys', maxKeys, 'must be a positive whole number')
    }
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.maxKeys = maxKeys
    this.#now = now
  }

  /** Keys currently held (expired ones count until they are swept). */
  get size(): number {
    return this.#size
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] {
    const now = this.#now()
    const entries = this.#entriesOf(set.id)
    let entry = entries.get(key)
    const states = entry === undefined || entry.expiresAt <= now ? undefined : entry.states
    const result = evaluate(states, now, set, cost)

    let expiresAt = now
    let exhausted = false
    for (const outcome of result.outcomes) {
      if (now + outcome.resetAfter > expiresAt) expiresAt = now + outcome.resetAfter
      if (outcome.remaining === 0) exhausted = true
    }
    if (result.allowed) {
      if (entry === undefined) {
        entry = { states: result.states, expiresAt, protectedUntil: 0 }
        this.#insert(entries, key, entry, now)
      } else {
        entry.states = result.states
        entry.expiresAt = expiresAt
      }
    }
    if (entry !== undefined && (exhausted || !result.allowed)) entry.protectedUntil = expiresAt
    return result.outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] {
    const now = this.#now()
    const entry = this.#sets.get(set.id)?.get(key)
    const states = entry === undefined || entry.expiresAt <= now ? undefined : entry.states
    return set.policies.map((policy, i) => peekOutcome(states?.[i], now, policy))
  }

  reset(key: string, set: PolicySet): void {
    const entries = this.#sets.get(set.id)
    if (entries?.delete(key)) this.#size--
  }

  /** Forgets every key. */
  clear(): void {
    this.#sets.clear()
    this.#size = 0
  }

  #entriesOf(setId: string): Map<string, Entry> {
    let entries = this.#sets.get(setId)
    if (entries === undefined) {
      entries = new Map()
      this.#sets.set(setId, entries)
    }
    return entries
  }

  #insert(entries: Map<string, Entry>, key: string, entry: Entry, now: number): void {
    this.#sweep(entries, now)
    if (this.#size >= this.maxKeys) this.#evictOne(now)
    entries.set(key, entry)
    this.#size++
  }

  #sweep(entries: Map<string, Entry>, now: number): void {
    let looked = 0
    for (const [key, entry] of entries) {
      if (looked++ === SWEEP_PER_INSERT || entry.expiresAt > now) return
      entries.delete(key)
      this.#size--
    }
  }

  /**
   * Evicts the oldest entry that is not protected. Protected entries met on the way move to the
   * back, so the next search starts past them; the worst case (nearly every key limited) is one
   * pass over the store.
   */
  #evictOne(now: number): void {
    for (const entries of this.#sets.values()) {
      const moved: [string, Entry][] = []
      let victim: string | undefined
      for (const [key, entry] of entries) {
        if (entry.protectedUntil <= now || entry.expiresAt <= now) {
          victim = key
          break
        }
        moved.push([key, entry])
      }
      for (const [key, entry] of moved) {
        entries.delete(key)
        entries.set(key, entry)
      }
      if (victim !== undefined) {
        entries.delete(victim)
        this.#size--
        return
      }
    }
    throw new StoreFullError(
      `MemoryStore is full: all ${this.maxKeys} keys are currently limited, so none can be forgotten safely; raise maxKeys`,
    )
  }
}
