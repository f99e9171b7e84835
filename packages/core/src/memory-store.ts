import {
  type AlgorithmState,
  blockState,
  type Kept,
  type Meter,
  meters,
  type Outcome,
  peekOutcome,
  penalize,
  refund,
  step,
} from './algorithms/index.js'
import { peekOf } from './algorithms/outcome.js'
import { entryOf, type PolicyDecision } from './decision.js'
import { ConfigError, StoreFullError } from './errors.js'
import { assertKnownOptions } from './known-options.js'
import type { Policy, PolicySet } from './policy.js'
import { evaluate, type Store } from './store.js'

/** Options of `new MemoryStore(options)`. */
export interface MemoryStoreOptions {
  /** Keys tracked at most, across every limiter using this store. Default 100 000. */
  maxKeys?: number
  /**
   * The clock, in epoch milliseconds (fractions are dropped, as Redis's clock is read). Default
   * `Date.now`. Read once when the store is made (its times are counted from then) and per call.
   */
  now?: () => number
}

/**
 * One key's states, each at its policy's index in this store (a policy id keeps one index): as
 * its meter keeps it, changed in place, or for a policy with `blockFor` the transition's state
 * in a `Blocking`. Each carries its expiry, in the store's time (see `MemoryStore`): when it is
 * back to full quota, and so reads as none.
 * The first two indices are fields (most apps have one or two policies): no array per key.
 */
class Entry {
  slot0: Kept | undefined
  slot1: Kept | undefined
  /** The states at index 2 on, at index − 2; undefined until a key has one. */
  more: (Kept | undefined)[] | undefined
  /** A limited key is never evicted before this, or a flood of new keys would unblock it. */
  protectedUntil: number

  // Assigned in order here rather than as field initialisers, which gave the fields another
  // order and made the two-policy sliding log about 20 % slower.
  constructor(slot0: Kept | undefined) {
    this.slot0 = slot0
    this.slot1 = undefined
    this.more = undefined
    this.protectedUntil = 0
  }
}

/**
 * What the store keeps for a key: an `Entry`, or, while the key is not limited and its states are
 * those of the store's first policies (the usual case for a store serving one limiter), those
 * states chained: the first policy's state, whose `next` is the second's, and so on. One object
 * and one pointer fewer per decision and per key. The states in an `Entry` have no `next`.
 */
type Held = Entry | Kept

/** Every option `new MemoryStore` takes: one list, so a new option is one more name here. */
export const MEMORY_STORE_OPTION_NAMES: readonly string[] = ['maxKeys', 'now']

/** The state of a policy with `blockFor`, which its transition replaces rather than changes. */
interface Blocking extends Kept {
  readonly state: AlgorithmState
}

/**
 * How a consume runs a set, a constant compared by identity (a boolean field is tested for truth
 * in a dozen instructions, V8 not knowing it holds only booleans):
 * - `transitions`: a policy has `blockFor`, or two share a state: the pure transitions;
 * - `alone`: the store's first policy alone, its key held as its state (`#consumeAlone`);
 * - `chain`: the store's first policies in order, a key held as their chained states (see `Held`;
 *   not for several policies of which one is a sliding log) (`#consumeChain`);
 * - `entry`: any other set, each state changed in place in the key's `Entry`.
 * A key that is limited is held as an `Entry` whatever the path: its consume then takes the last.
 */
type Path = 'transitions' | 'alone' | 'chain' | 'entry'

/** How this store runs one set of policies; worked out once per set. */
interface Plan {
  readonly set: PolicySet
  /** The store's index of each policy in the set. */
  readonly indices: readonly number[]
  /** Each policy's meter; undefined for a policy with `blockFor`, which runs its transition. */
  readonly meters: readonly (Meter<Kept> | undefined)[]
  /** How a consume runs the set (see `Path`). */
  readonly path: Path
  /** Each policy's time minus the store's time (see `shiftOf`). */
  readonly shifts: readonly number[]
}

/**
 * `store.consume`, each outcome made as the Decision's entry for its policy: the limiter's path
 * for a MemoryStore, which saves copying each outcome into its entry. Not part of the public API.
 */
export let consumeEntries: (store: MemoryStore, key: string, set: PolicySet, cost: number) => readonly PolicyDecision[]

/** Expired entries looked at per new key: keeps memory trim without a timer. */
const SWEEP_PER_INSERT = 2

/** How long before its creation a store's time starts: the clock may step back this far (one day). */
const ORIGIN_BEFORE_MS = 86_400_000

/**
 * Keeps state in this process, in one Map from key to the states of the policies seen for it
 * (a policy's state is shared by every limiter with the same policy, as in Redis). No timers:
 * entries expire lazily and are reused when their key returns; once the store is half full,
 * every new key moves a sweep two entries on, forgetting expired ones. When `maxKeys` is reached
 * the sweep goes on to the next key that is not currently limited and evicts it; if every key is
 * limited the store throws `StoreFullError`, which the limiter's `onStoreError` turns into a
 * decision.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number
  /** The injected clock; undefined for `Date.now`, which is then called directly (a call through a field costs more). */
  readonly #clock: (() => number) | undefined
  /**
   * Epoch ms at which the store's time is 0: a day before the store was made (so a clock stepped
   * back stays after it). Every time the store keeps (expiries, and each policy's states) is counted
   * from it, so it is a small integer, which V8 holds in the object itself; an epoch time is a
   * separate heap number, 16 bytes and one more load away. Each policy's states are on its own
   * time, the store's time plus its shift (see `shiftOf`), so that windows stay aligned to
   * multiples of their length since the epoch and every decision is the same as on epoch time.
   * After about 23 days the times no longer fit: decisions are the same, and cost what epoch
   * times did.
   */
  readonly #origin: number
  readonly #entries = new Map<string, Held>()
  /** SLUICE_MEMORY_STORE_FULL is said once: a full store refuses every new key. */
  #warnedFull = false
  readonly #policyIndex = new Map<string, number>()
  readonly #plans = new WeakMap<PolicySet, Plan>()
  /** The last set's plan: a limiter uses one set, so this saves the WeakMap lookup. */
  #plan: Plan | undefined
  #cursor: Iterator<[string, Held]> = this.#entries.entries()

  constructor(options: MemoryStoreOptions = {}) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { maxKeys: 10_000 }')
    }
    assertKnownOptions(options as Record<string, unknown>, MEMORY_STORE_OPTION_NAMES, 'MemoryStore')
    const { maxKeys = 100_000, now = Date.now } = options
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigError('maxKeys', maxKeys, 'must be a positive whole number')
    }
    if (typeof now !== 'function') throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    this.maxKeys = maxKeys
    this.#clock = now === Date.now ? undefined : now
    this.#origin = this.now() - ORIGIN_BEFORE_MS
  }

  /** The store's clock, epoch ms: what `refund`'s `admittedAt` is read on. */
  now(): number {
    return Math.floor(this.#clock === undefined ? Date.now() : this.#clock())
  }

  /**
   * The store's time: ms since its origin. Whole milliseconds keep every decision's times whole
   * (performance.now-style clocks are not), and `Math.floor` gives V8 a small integer, not a heap number.
   */
  #time(): number {
    return Math.floor((this.#clock === undefined ? Date.now() : this.#clock()) - this.#origin)
  }

  /** Keys currently held (expired ones count until they are swept). */
  get size(): number {
    return this.#entries.size
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] {
    return this.#consume(key, set, cost, false)
  }

  static {
    consumeEntries = (store, key, set, cost) => store.#consume(key, set, cost, true) as readonly PolicyDecision[]
  }

  /** `consume`; with `asEntries`, each outcome made as the Decision's entry for its policy (see `labelled`). */
  #consume(key: string, set: PolicySet, cost: number, asEntries: boolean): readonly Outcome[] {
    const now = this.#time()
    const plan = this.#planOf(set)
    const { path } = plan
    if (path === 'transitions') {
      const outcomes = this.#consumeByTransitions(key, plan, cost, now)
      return asEntries ? outcomes.map((o, i) => entryOf(set.policies[i] as Policy, o)) : outcomes
    }
    const held = this.#entries.get(key)
    if (path !== 'entry' && !(held instanceof Entry)) {
      if (path === 'alone') return this.#consumeAlone(key, held, plan, cost, now, asEntries)
      return this.#consumeChain(key, held, plan, cost, now, asEntries)
    }
    let entry = held === undefined ? undefined : this.#entryOf(key, held)
    const { policies } = set
    if (policies.length === 2) return this.#consumePair(key, entry, plan, cost, now, asEntries)
    const { indices, shifts } = plan
    const planMeters = plan.meters as readonly Meter<Kept>[]
    const outcomes: Outcome[] = new Array(policies.length)
    let allowed = true
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i] as Policy
      const outcome = (planMeters[i] as Meter<Kept>).decide(
        liveSlot(entry, indices[i] as number, now),
        now + (shifts[i] as number),
        policy,
        cost,
        asEntries ? policy : undefined,
      )
      outcomes[i] = outcome
      if (!outcome.allowed) allowed = false
    }
    if (!allowed) {
      // Nothing is taken from any policy, so those that would have admitted report their quota untouched.
      for (let i = 0; i < policies.length; i++) {
        if ((outcomes[i] as Outcome).allowed) {
          const state = liveSlot(entry, indices[i] as number, now)
          const policy = policies[i] as Policy
          const time = now + (shifts[i] as number)
          outcomes[i] = (planMeters[i] as Meter<Kept>).decide(state, time, policy, 0, asEntries ? policy : undefined)
        }
      }
    }
    if (allowed) {
      entry ??= this.#newEntry(key, now)
      for (let i = 0; i < policies.length; i++) {
        const index = indices[i] as number
        const stored = slotAt(entry, index)
        const time = now + (shifts[i] as number)
        const state = (planMeters[i] as Meter<Kept>).take(live(stored, now), time, policies[i] as Policy, cost, stored)
        state.expiry = now + (outcomes[i] as Outcome).resetAfter
        if (state !== stored) setSlot(entry, index, state)
      }
    }
    // Only a limited key is protected: most decisions skip working out until when.
    if (entry !== undefined && (!allowed || exhausted(outcomes))) protectUntilLatest(entry, outcomes, now)
    return outcomes
  }

  /**
   * `#consume` for two policies on a key held as an `Entry` (or not held): the loops unrolled,
   * each policy's states and meter read once, and one call site per meter.
   */
  #consumePair(
    key: string,
    held: Entry | undefined,
    plan: Plan,
    cost: number,
    now: number,
    asEntries: boolean,
  ): readonly Outcome[] {
    const { policies } = plan.set
    const { indices, shifts } = plan
    const first = policies[0] as Policy
    const second = policies[1] as Policy
    const firstMeter = plan.meters[0] as Meter<Kept>
    const secondMeter = plan.meters[1] as Meter<Kept>
    const firstIndex = indices[0] as number
    const secondIndex = indices[1] as number
    const firstTime = now + (shifts[0] as number)
    const secondTime = now + (shifts[1] as number)
    const firstStored = held === undefined ? undefined : slotAt(held, firstIndex)
    const secondStored = held === undefined ? undefined : slotAt(held, secondIndex)
    const firstLive = live(firstStored, now)
    const secondLive = live(secondStored, now)
    const firstLabel = asEntries ? first : undefined
    const secondLabel = asEntries ? second : undefined
    let firstOutcome = firstMeter.decide(firstLive, firstTime, first, cost, firstLabel)
    let secondOutcome = secondMeter.decide(secondLive, secondTime, second, cost, secondLabel)
    if (firstOutcome.allowed && secondOutcome.allowed) {
      const entry = held ?? this.#newEntry(key, now)
      const firstState = firstMeter.take(firstLive, firstTime, first, cost, firstStored)
      firstState.expiry = now + firstOutcome.resetAfter
      if (firstState !== firstStored) setSlot(entry, firstIndex, firstState)
      const secondState = secondMeter.take(secondLive, secondTime, second, cost, secondStored)
      secondState.expiry = now + secondOutcome.resetAfter
      if (secondState !== secondStored) setSlot(entry, secondIndex, secondState)
      const outcomes = [firstOutcome, secondOutcome]
      if (firstOutcome.remaining === 0 || secondOutcome.remaining === 0) protectUntilLatest(entry, outcomes, now)
      return outcomes
    }
    // Nothing is taken from either policy, so one that would have admitted reports its quota untouched.
    if (firstOutcome.allowed) firstOutcome = firstMeter.decide(firstLive, firstTime, first, 0, firstLabel)
    if (secondOutcome.allowed) secondOutcome = secondMeter.decide(secondLive, secondTime, second, 0, secondLabel)
    const outcomes = [firstOutcome, secondOutcome]
    if (held !== undefined) protectUntilLatest(held, outcomes, now)
    return outcomes
  }

  /**
   * `#consumeChain` for the store's first policy alone: one state, no loops (a one-policy decision
   * through the loops ran 13 % more instructions).
   */
  #consumeAlone(
    key: string,
    held: Kept | undefined,
    plan: Plan,
    cost: number,
    now: number,
    asEntries: boolean,
  ): readonly Outcome[] {
    const policy = plan.set.policies[0] as Policy
    const meter = plan.meters[0] as Meter<Kept>
    const time = now + (plan.shifts[0] as number)
    const liveState = live(held, now)
    const outcome = meter.decide(liveState, time, policy, cost, asEntries ? policy : undefined)
    const outcomes = [outcome]
    let state = held
    if (outcome.allowed) {
      state = meter.take(liveState, time, policy, cost, held)
      state.expiry = now + outcome.resetAfter
      if (outcome.remaining > 0) {
        if (held === undefined) this.#insert(key, state, now)
        else if (state !== held) this.#entries.set(key, state)
        return outcomes
      }
    }
    if (state === undefined) return outcomes
    this.#protect(key, entryOfChain(state), outcomes, now, held === undefined)
    return outcomes
  }

  /**
   * `#consume` for the store's first policies in order, on a key held as their chained states (or
   * not held): it stays so until the key is limited, which takes an `Entry` to protect it. States
   * chained after the set's (a longer set's) stay as they are.
   */
  #consumeChain(
    key: string,
    held: Kept | undefined,
    plan: Plan,
    cost: number,
    now: number,
    asEntries: boolean,
  ): readonly Outcome[] {
    const { policies } = plan.set
    const { shifts } = plan
    const planMeters = plan.meters as readonly Meter<Kept>[]
    const outcomes: Outcome[] = new Array(policies.length)
    let allowed = true
    let stored = held
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i] as Policy
      const time = now + (shifts[i] as number)
      const outcome = (planMeters[i] as Meter<Kept>).decide(
        live(stored, now),
        time,
        policy,
        cost,
        asEntries ? policy : undefined,
      )
      outcomes[i] = outcome
      if (!outcome.allowed) allowed = false
      stored = stored?.next
    }
    if (!allowed) {
      // Nothing is taken from any policy, so those that would have admitted report their quota untouched.
      stored = held
      for (let i = 0; i < policies.length; i++) {
        if ((outcomes[i] as Outcome).allowed) {
          const policy = policies[i] as Policy
          const time = now + (shifts[i] as number)
          outcomes[i] = (planMeters[i] as Meter<Kept>).decide(
            live(stored, now),
            time,
            policy,
            0,
            asEntries ? policy : undefined,
          )
        }
        stored = stored?.next
      }
      if (held !== undefined) this.#protect(key, entryOfChain(held), outcomes, now, false)
      return outcomes
    }
    let first = held
    let previous: Kept | undefined
    stored = held
    for (let i = 0; i < policies.length; i++) {
      const following = stored?.next
      const time = now + (shifts[i] as number)
      const state = (planMeters[i] as Meter<Kept>).take(live(stored, now), time, policies[i] as Policy, cost, stored)
      state.expiry = now + (outcomes[i] as Outcome).resetAfter
      if (state !== stored) {
        // A new key's state, or the first past the end of a shorter set's chain.
        if (previous === undefined) first = state
        else previous.next = state
      }
      previous = state
      stored = following
    }
    // A stored chain was changed in place (see `logs` in `#planOf`): only a new key's is stored here.
    const chain = first as Kept
    if (exhausted(outcomes)) this.#protect(key, entryOfChain(chain), outcomes, now, held === undefined)
    else if (held === undefined) this.#insert(key, chain, now)
    return outcomes
  }

  /** Holds the key as `entry`, protected until its outcomes are back to full quota. */
  #protect(key: string, entry: Entry, outcomes: readonly Outcome[], now: number, inserting: boolean): void {
    entry.protectedUntil = latestOf(outcomes, now)
    if (inserting) this.#insert(key, entry, now)
    else this.#entries.set(key, entry)
  }

  /** `consume` for a set with a `blockFor` policy: the transitions, on the states as they read them. */
  #consumeByTransitions(key: string, plan: Plan, cost: number, now: number): readonly Outcome[] {
    const { indices } = plan
    let entry = this.#existingEntry(key)
    const result = evaluate(entry && statesOf(entry, plan, now), now, plan.set, cost, plan.shifts)
    const { outcomes } = result
    const latest = latestOf(outcomes, now)
    if (result.allowed) {
      entry ??= this.#newEntry(key, now)
      for (let i = 0; i < indices.length; i++) {
        keep(entry, plan, i, result.states[i], now + (outcomes[i] as Outcome).resetAfter)
      }
    } else if (result.blocks !== undefined) {
      // A denial that starts a block (blockFor) writes that policy's state, nothing else.
      entry ??= this.#newEntry(key, now)
      for (const i of result.blocks) {
        keep(entry, plan, i, result.states[i], now + (outcomes[i] as Outcome).resetAfter)
      }
    }
    if (entry !== undefined && latest > entry.protectedUntil && (!result.allowed || exhausted(outcomes))) {
      entry.protectedUntil = latest
    }
    return outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] {
    const now = this.#time()
    const held = this.#entries.get(key)
    const plan = this.#planOf(set)
    return set.policies.map((policy, i) => {
      const slot = held === undefined ? undefined : live(heldSlot(held, plan.indices[i] as number), now)
      const meter = plan.meters[i]
      const time = now + (plan.shifts[i] as number)
      if (meter === undefined) return peekOutcome((slot as Blocking | undefined)?.state, time, policy)
      return peekOf(meter.decide(slot, time, policy, 0), meter.decide(slot, time, policy, 1))
    })
  }

  /** Refunded states keep their expiry: a refund never lengthens the time back to full quota. */
  refund(key: string, set: PolicySet, cost: number, admittedAt?: number): void {
    const entry = this.#existingEntry(key)
    if (entry === undefined) return
    const now = this.#time()
    const plan = this.#planOf(set)
    const states = statesOf(entry, plan, now)
    for (let i = 0; i < states.length; i++) {
      const state = states[i]
      const shift = plan.shifts[i] as number
      // admittedAt is epoch ms (from now()): on the policy's time like the rest.
      const at = admittedAt === undefined ? undefined : admittedAt - this.#origin + shift
      const next = refund(state, now + shift, set.policies[i] as Policy, cost, at)
      if (next !== state) keep(entry, plan, i, next, (slotAt(entry, plan.indices[i] as number) as Kept).expiry)
    }
  }

  /** Writes every policy's penalized state, with the expiry a consume would give it. */
  penalize(key: string, set: PolicySet, cost: number): void {
    const now = this.#time()
    const plan = this.#planOf(set)
    const { indices } = plan
    let entry = this.#existingEntry(key)
    const states = entry && statesOf(entry, plan, now)
    const times = plan.shifts.map((shift) => now + shift)
    const next = set.policies.map((policy, i) => penalize(states?.[i], times[i] as number, policy, cost))
    const resets = set.policies.map((policy, i) => step(next[i], times[i] as number, policy, 0).outcome.resetAfter)
    const latest = now + Math.max(0, ...resets)
    entry ??= this.#newEntry(key, now)
    for (let i = 0; i < indices.length; i++) {
      keep(entry, plan, i, next[i], now + (resets[i] as number))
    }
    if (latest > entry.protectedUntil) entry.protectedUntil = latest
  }

  /** Blocks the key in the set's `blockFor` policies; the entry lives at least as long. */
  block(key: string, set: PolicySet, duration: number): void {
    const now = this.#time()
    const plan = this.#planOf(set)
    const { indices } = plan
    let entry = this.#existingEntry(key)
    const states = entry && statesOf(entry, plan, now)
    const until = now + duration
    entry ??= this.#newEntry(key, now)
    for (let i = 0; i < indices.length; i++) {
      const policy = set.policies[i] as Policy
      if (policy.blockFor === 0) continue
      const shift = plan.shifts[i] as number
      const next = blockState(states?.[i], until + shift)
      const expiry = now + step(next, now + shift, policy, 0).outcome.resetAfter
      const blocking: Blocking = { state: next, expiry, next: undefined }
      setSlot(entry, indices[i] as number, blocking)
    }
    if (until > entry.protectedUntil) entry.protectedUntil = until
  }

  reset(key: string, set: PolicySet): void {
    const held = this.#entries.get(key)
    if (held === undefined) return
    for (const index of this.#planOf(set).indices) {
      const slot = heldSlot(held, index)
      if (slot !== undefined) slot.expiry = 0
    }
    if (expiresAt(held) === 0) this.#entries.delete(key)
    else if (held instanceof Entry) held.protectedUntil = 0
  }

  /** Forgets every key. */
  clear(): void {
    this.#entries.clear()
    this.#cursor = this.#entries.entries()
  }

  /** How this store runs the set (see `Plan`); worked out once per set. */
  #planOf(set: PolicySet): Plan {
    const last = this.#plan
    if (last !== undefined && last.set === set) return last
    let plan = this.#plans.get(set)
    if (plan === undefined) {
      const indices = set.policies.map((policy) => {
        let index = this.#policyIndex.get(policy.id)
        if (index === undefined) {
          index = this.#policyIndex.size
          this.#policyIndex.set(policy.id, index)
        }
        return index
      })
      const planMeters = set.policies.map((policy) => (policy.blockFor > 0 ? undefined : meters[policy.algorithm]))
      // Two policies alike but for their names share one state: taking in place would count twice.
      const inPlace = planMeters.every((meter) => meter !== undefined) && new Set(indices).size === indices.length
      // A sliding log among several policies keeps an entry: chained, the two-policy log ran 35 %
      // slower (with twice the last-level misses in callgrind's cache simulation). So a stored
      // state in a chain of several is always changed in place: only a sliding log's `take` makes
      // a new state over a stored one, which would have to take over its link.
      const logs = indices.length > 1 && set.policies.some((policy) => policy.algorithm === 'sliding-log')
      const chained = inPlace && !logs && indices.every((index, i) => index === i)
      const path = !inPlace ? 'transitions' : !chained ? 'entry' : indices.length === 1 ? 'alone' : 'chain'
      const shifts = set.policies.map((policy) => shiftOf(this.#origin, policy))
      plan = { set, indices, meters: planMeters, path, shifts }
      this.#plans.set(set, plan)
    }
    this.#plan = plan
    return plan
  }

  /** A new key's entry, inserted. */
  #newEntry(key: string, now: number): Entry {
    const entry = new Entry(undefined)
    this.#insert(key, entry, now)
    return entry
  }

  /** The key's `Entry` if the store holds the key (see `#entryOf`). */
  #existingEntry(key: string): Entry | undefined {
    const held = this.#entries.get(key)
    return held === undefined ? undefined : this.#entryOf(key, held)
  }

  /** The key's `Entry`: chained states become its slots (the key keeps its place in the sweep's order). */
  #entryOf(key: string, held: Held): Entry {
    if (held instanceof Entry) return held
    const entry = entryOfChain(held)
    this.#entries.set(key, entry)
    return entry
  }

  #insert(key: string, held: Held, now: number): void {
    // Below half full, expired entries stay to be reused when their key returns: deleting and
    // re-creating them made entries die old, and garbage collection took 40 % of the time.
    if (this.#entries.size >= this.maxKeys / 2) {
      for (let i = 0; i < SWEEP_PER_INSERT; i++) {
        const next = this.#advance()
        if (next !== undefined && expiresAt(next[1]) <= now) this.#entries.delete(next[0])
      }
    }
    if (this.#entries.size >= this.maxKeys) this.#evictOne(now)
    this.#entries.set(key, held)
  }

  /**
   * The next entry in insertion order, wrapping around. One live iterator serves the sweep and
   * eviction, so neither rescans from the head of the Map, where deleted slots pile up until V8
   * compacts it (rescanning made every insert O(deleted)).
   */
  #advance(): [string, Held] | undefined {
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
      const [key, held] = next
      if (!(held instanceof Entry) || held.protectedUntil <= now || expiresAt(held) <= now) {
        this.#entries.delete(key)
        return
      }
    }
    if (!this.#warnedFull) {
      this.#warnedFull = true
      console.warn(
        `[sluice] SLUICE_MEMORY_STORE_FULL: all ${this.maxKeys} keys (maxKeys) of a MemoryStore are limited, so a new key ` +
          "is decided by the limiter's onStoreError ('allow' by default: admitted unlimited) until one expires. " +
          'Set maxKeys above the number of clients that can be limited at once. Reported once per store.',
      )
    }
    throw new StoreFullError(
      `MemoryStore is full: all ${this.maxKeys} keys are currently limited, so none can be forgotten safely; raise maxKeys`,
    )
  }
}

/**
 * A policy's time minus the store's time: the origin's phase in the policy's window (from 0 up,
 * even for an origin before the epoch), so that windows stay aligned to the epoch; floored as in
 * `#time`, since a float remainder is a heap number to V8. A GCRA whose emission interval is a
 * fraction of a millisecond keeps epoch time (the whole origin): its stored times carry float
 * error that depends on their size, and on epoch ms it rounds as the transitions, the Redis
 * scripts and every other store do. Every other algorithm's arithmetic is exact on whole ms.
 */
function shiftOf(origin: number, { algorithm, limit, window }: Policy): number {
  if (algorithm === 'gcra' && window % limit !== 0) return origin
  return Math.floor(((origin % window) + window) % window)
}

/** The state stored for the policy at `index`, live or not. */
function slotAt(entry: Entry, index: number): Kept | undefined {
  return index === 0 ? entry.slot0 : index === 1 ? entry.slot1 : entry.more?.[index - 2]
}

/** `slotAt` for a key however it is held. */
function heldSlot(held: Held, index: number): Kept | undefined {
  if (held instanceof Entry) return slotAt(held, index)
  let state: Kept | undefined = held
  for (let i = 0; i < index && state !== undefined; i++) state = state.next
  return state
}

/** An `Entry` of chained states, each in its slot, unchained. */
function entryOfChain(first: Kept): Entry {
  const entry = new Entry(first)
  let state = first.next
  first.next = undefined
  for (let index = 1; state !== undefined; index++) {
    const following: Kept | undefined = state.next
    state.next = undefined
    setSlot(entry, index, state)
    state = following
  }
  return entry
}

function setSlot(entry: Entry, index: number, slot: Kept): void {
  if (index === 0) entry.slot0 = slot
  else if (index === 1) entry.slot1 = slot
  else {
    entry.more ??= []
    entry.more[index - 2] = slot
  }
}

/** When the last of the key's states is back to full quota: the key can be forgotten then (0: none). */
function expiresAt(held: Held): number {
  if (!(held instanceof Entry)) {
    let latest = 0
    for (let state: Kept | undefined = held; state !== undefined; state = state.next) {
      if (state.expiry > latest) latest = state.expiry
    }
    return latest
  }
  const entry = held
  let latest = Math.max(entry.slot0?.expiry ?? 0, entry.slot1?.expiry ?? 0)
  for (const slot of entry.more ?? []) if (slot !== undefined && slot.expiry > latest) latest = slot.expiry
  return latest
}

/** A stored state while it is live; an expired one reads as none. */
function live(slot: Kept | undefined, now: number): Kept | undefined {
  return slot !== undefined && slot.expiry > now ? slot : undefined
}

/** The stored state of the policy at `index` while it is live. */
function liveSlot(entry: Entry | undefined, index: number, now: number): Kept | undefined {
  return entry === undefined ? undefined : live(slotAt(entry, index), now)
}

/** The live state of each policy for this entry as the transitions read it, aligned with the set. */
function statesOf(entry: Entry, plan: Plan, now: number): (AlgorithmState | undefined)[] {
  return plan.indices.map((index, i) => {
    const slot = liveSlot(entry, index, now)
    const meter = plan.meters[i]
    if (slot === undefined) return undefined
    return meter === undefined ? (slot as Blocking).state : meter.toState(slot, plan.set.policies[i] as Policy)
  })
}

/** Stores a state a transition (or refund, penalty) returned for the set's policy `i`, with its expiry. */
function keep(entry: Entry, plan: Plan, i: number, state: AlgorithmState, expiry: number): void {
  const meter = plan.meters[i]
  const blocking: Blocking | undefined = meter === undefined ? { state, expiry, next: undefined } : undefined
  const slot = blocking ?? (meter as Meter<Kept>).fromState(state)
  slot.expiry = expiry
  setSlot(entry, plan.indices[i] as number, slot)
}

/** When the last of these outcomes is back to full quota. */
function latestOf(outcomes: readonly Outcome[], now: number): number {
  let latest = now
  for (let i = 0; i < outcomes.length; i++) {
    const reset = now + (outcomes[i] as Outcome).resetAfter
    if (reset > latest) latest = reset
  }
  return latest
}

/** Protects the entry until its outcomes are back to full quota, if that is later than it is protected until. */
function protectUntilLatest(entry: Entry, outcomes: readonly Outcome[], now: number): void {
  const latest = latestOf(outcomes, now)
  if (latest > entry.protectedUntil) entry.protectedUntil = latest
}

/** Whether any policy has nothing left: the key is limited, so eviction passes it over. */
function exhausted(outcomes: readonly Outcome[]): boolean {
  for (let i = 0; i < outcomes.length; i++) if ((outcomes[i] as Outcome).remaining === 0) return true
  return false
}
