import { type AlgorithmState, copyState, type Outcome, peekOutcome, refund } from './algorithms/index.js'
import { ConfigError, StoreFullError } from './errors.js'
import type { Policy, PolicySet } from './policy.js'
import { evaluate, type Store } from './store.js'

export interface MemoryStoreOptions {
  /** Keys tracked at most, across every limiter using this store. Default 100 000. */
  maxKeys?: number
  /** The clock, in epoch milliseconds (fractions are dropped, as Redis's clock is read). Default `Date.now`. */
  now?: () => number
}

interface Entry {
  /** Each policy's state, at the policy's index in this store (a policy id keeps one index). */
  readonly states: AlgorithmState[]
  /** When each state is back to full quota, and so reads as no state at all. */
  readonly expiries: number[]
  /** The latest of the expiries: the whole entry can be forgotten after it. */
  expiresAt: number
  /** A limited key is never evicted before this, or a flood of new keys would unblock it. */
  protectedUntil: number
}

/** Expired entries looked at per new key: keeps memory trim without a timer. */
const SWEEP_PER_INSERT = 2

/**
 * Keeps state in this process, in one Map from key to the states of the policies seen for it
 * (a policy's state is shared by every limiter with the same policy, as in Redis). No timers:
 * entries expire lazily and are reused when their key returns; once the store is half full,
 * every new key moves a sweep two entries on, forgetting expired ones. When `maxKeys` is reached the sweep goes on to the next key that is not currently
 * limited and evicts it; if every key is limited the store throws `StoreFullError`, which the
 * limiter's `onStoreError` turns into a decision.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number
  readonly #now: () => number
  readonly #entries = new Map<string, Entry>()
  readonly #policyIndex = new Map<string, number>()
  readonly #setIndices = new WeakMap<PolicySet, number[]>()
  #cursor: Iterator<[string, Entry]> = this.#entries.entries()

  constructor(options: MemoryStoreOptions = {}) {
    const { maxKeys = 100_000, now = Date.now } = options
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigError('maxKeys', maxKeys, 'must be a positive whole number')
    }
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.maxKeys = maxKeys
    // Whole milliseconds keep every decision's times whole (performance.now-style clocks are not).
    this.#now = now === Date.now ? now : () => Math.floor(now())
  }

  /** Keys currently held (expired ones count until they are swept). */
  get size(): number {
    return this.#entries.size
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] {
    const now = this.#now()
    const indices = this.#indicesOf(set)
    let entry = this.#entries.get(key)
    const result = evaluate(entry && statesOf(entry, indices, now), now, set, cost)
    const { outcomes } = result

    let latest = now
    let exhausted = !result.allowed
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i] as Outcome
      if (now + outcome.resetAfter > latest) latest = now + outcome.resetAfter
      if (outcome.remaining === 0) exhausted = true
    }
    if (result.allowed) {
      if (entry === undefined) {
        entry = { states: [], expiries: [], expiresAt: latest, protectedUntil: 0 }
        this.#insert(key, entry, now)
      }
      for (let i = 0; i < indices.length; i++) {
        const index = indices[i] as number
        const stored = entry.states[index]
        if (stored === undefined) entry.states[index] = result.states[i]
        else if (stored !== result.states[i]) copyState[(set.policies[i] as Policy).algorithm](stored, result.states[i])
        entry.expiries[index] = now + (outcomes[i] as Outcome).resetAfter
      }
      if (latest > entry.expiresAt) entry.expiresAt = latest
    }
    if (entry !== undefined && exhausted && latest > entry.protectedUntil) entry.protectedUntil = latest
    return outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] {
    const now = this.#now()
    const entry = this.#entries.get(key)
    const states = entry && statesOf(entry, this.#indicesOf(set), now)
    return set.policies.map((policy, i) => peekOutcome(states?.[i], now, policy))
  }

  /** Refunded states keep their expiry: a refund never lengthens the time back to full quota. */
  refund(key: string, set: PolicySet, cost: number): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    const now = this.#now()
    const indices = this.#indicesOf(set)
    const states = statesOf(entry, indices, now)
    for (let i = 0; i < indices.length; i++) {
      const policy = set.policies[i] as Policy
      const state = states[i]
      const next = refund(state, now, policy, cost)
      if (next !== state) copyState[policy.algorithm](state, next)
    }
  }

  reset(key: string, set: PolicySet): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    for (const index of this.#indicesOf(set)) entry.expiries[index] = 0
    if (entry.expiries.every((expiry) => expiry === 0)) this.#entries.delete(key)
    else entry.protectedUntil = 0
  }

  /** Forgets every key. */
  clear(): void {
    this.#entries.clear()
    this.#cursor = this.#entries.entries()
  }

  /** The store's index of each policy in the set; computed once per set. */
  #indicesOf(set: PolicySet): number[] {
    let indices = this.#setIndices.get(set)
    if (indices === undefined) {
      indices = set.policies.map((policy) => {
        let index = this.#policyIndex.get(policy.id)
        if (index === undefined) {
          index = this.#policyIndex.size
          this.#policyIndex.set(policy.id, index)
        }
        return index
      })
      this.#setIndices.set(set, indices)
    }
    return indices
  }

  #insert(key: string, entry: Entry, now: number): void {
    // Below half full, expired entries stay to be reused when their key returns: deleting and
    // re-creating them made entries die old, and garbage collection took 40 % of the time.
    if (this.#entries.size >= this.maxKeys / 2) {
      for (let i = 0; i < SWEEP_PER_INSERT; i++) {
        const next = this.#advance()
        if (next !== undefined && next[1].expiresAt <= now) this.#entries.delete(next[0])
      }
    }
    if (this.#entries.size >= this.maxKeys) this.#evictOne(now)
    this.#entries.set(key, entry)
  }

  /**
   * The next entry in insertion order, wrapping around. One live iterator serves the sweep and
   * eviction, so neither rescans from the head of the Map, where deleted slots pile up until V8
   * compacts it (rescanning made every insert O(deleted)).
   */
  #advance(): [string, Entry] | undefined {
    let step = this.#cursor.next()
    if (step.done) {
      this.#cursor = this.#entries.entries()
      step = this.#cursor.next()
    }
    return step.done ? undefined : step.value
  }

  /**
   * Evicts the next entry, in a clock sweep over insertion order, that is expired or not
   * protected; a limited key is passed over. When a whole turn finds only limited keys there is
   * nothing safe to forget.
   */
  #evictOne(now: number): void {
    for (let looked = 0, size = this.#entries.size; looked < size; looked++) {
      const next = this.#advance()
      if (next === undefined) break
      const [key, entry] = next
      if (entry.protectedUntil <= now || entry.expiresAt <= now) {
        this.#entries.delete(key)
        return
      }
    }
    throw new StoreFullError(
      `MemoryStore is full: all ${this.maxKeys} keys are currently limited, so none can be forgotten safely; raise maxKeys`,
    )
  }
}

/** The live state of each policy for this entry, aligned with the set; expired states read as none. */
function statesOf(entry: Entry, indices: readonly number[], now: number): (AlgorithmState | undefined)[] {
  const states = new Array<AlgorithmState | undefined>(indices.length)
  for (let i = 0; i < indices.length; i++) {
    const index = indices[i] as number
    states[i] = (entry.expiries[index] ?? 0) > now ? entry.states[index] : undefined
  }
  return states
}
