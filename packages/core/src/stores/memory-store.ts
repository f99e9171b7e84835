import {
  type AlgorithmState,
  blockState,
  type Kept,
  type Meter,
  meterOf,
  type Outcome,
  peekOutcome,
  penalize,
  refund,
  step,
} from '../algorithms/index.js'
import { peekOf } from '../algorithms/outcome.js'
import { ConfigError, StoreFullError } from '../diagnostics/errors.js'
import { assertKnownOptions } from '../diagnostics/known-options.js'
import { type Validate, Warnings } from '../diagnostics/validations.js'
import { entryOf, type PolicyDecision } from '../limiter/decision.js'
import { isNamed, type Policy, type PolicySet } from '../policies/policy.js'
import { evaluate, type Store } from './contract.js'

/** Options of `new MemoryStore(options)`. */
export interface MemoryStoreOptions {
  /** Keys tracked at most, across every limiter using this store. Default 100 000. */
  maxKeys?: number
  /**
   * The clock, in epoch milliseconds (fractions are dropped, as Redis's clock is read). Default
   * `Date.now`. Read once when the store is made (its times are counted from then) and per call.
   */
  now?: () => number
  /** Whether to warn once when every key is limited (SLUICE_MEMORY_STORE_FULL): see `Validate`. Default true. */
  validate?: Validate
}

/**
 * A key's states, each at its policy's index in this store (a policy id keeps one index): as
 * its meter keeps it, changed in place, or for a policy with `blockFor` the transition's state
 * in a `Blocking`. Each carries its expiry, in the store's time (see `MemoryStore`): when it is
 * back to full quota, and so reads as none; and until when it is protected from eviction.
 * The first two indices are fields (most apps have one or two policies): no array per key.
 */
class Entry {
  slot0: Kept | undefined
  slot1: Kept | undefined
  /** The states at index 2 on, at index − 2; undefined until a key has one. */
  more: (Kept | undefined)[] | undefined

  // Assigned in order here rather than as field initialisers, which gave the fields another
  // order and made the two-policy sliding log about 20 % slower.
  constructor(slot0: Kept | undefined) {
    this.slot0 = slot0
    this.slot1 = undefined
    this.more = undefined
  }
}

/**
 * What the store keeps for a key: while the key has only a state of the store's first policy
 * (the usual case for a store serving one limiter of one policy), that state itself, bare; else
 * an `Entry`. One object and one load fewer per decision and per key.
 */
type Held = Entry | Kept

/** Every option `new MemoryStore` takes: one list, so a new option is one more name here. */
export const MEMORY_STORE_OPTION_NAMES: readonly string[] = ['maxKeys', 'now', 'validate']

/** The state of a policy with `blockFor`, which its transition replaces rather than changes. */
interface Blocking extends Kept {
  readonly state: AlgorithmState
}

/** How this store runs one set of policies; worked out once per set. */
interface Plan {
  readonly set: PolicySet
  /** The store's index of each policy in the set. */
  readonly indices: readonly number[]
  /** Each policy's meter; undefined for a policy with `blockFor`, which runs its transition. */
  readonly meters: readonly (Meter<Kept> | undefined)[]
  /**
   * Whether a consume runs the pure transitions (`#consumeByTransitions`): a policy has
   * `blockFor`, or two policies share a state (taking in place would count twice).
   */
  readonly transitions: boolean
  /** Whether the set is the store's first policy alone, so that a new key is held bare (see `Held`). */
  readonly bare: boolean
  /** Each policy's time minus the store's time (see `shiftOf`). */
  readonly shifts: readonly number[]
}

/**
 * `store.consume` with each outcome made as the Decision's entry for its policy (see `Labelled`):
 * the limiter's path for a MemoryStore of its own class, which saves a copy of each outcome
 * (`toDecision`). Not part of the public API.
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
 * decision. A key is limited while one of its states is protected (see `protect`): derived from
 * each state, so that resetting one set's states never frees another set's limited key.
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
  readonly #warnings: Warnings
  readonly #policyIndex = new Map<string, number>()
  /** Its fixed windows start at the policy's offset: calendar periods are served (see `Store`). */
  readonly calendarPeriods = true
  /** Its meters start a `start: 'first-request'` window at the key's first request (see `Store`). */
  readonly firstRequestWindows = true
  readonly warmup = true
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
    this.#warnings = new Warnings(options.validate)
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

  /**
   * The decision rule: every policy decides on its live state; if one denies, nothing is taken
   * and the others report their quota untouched (decided again at cost 0); else each takes the
   * cost, in place, and its state expires when it is back to full quota. Either way each state
   * the key keeps is protected while its outcome says it is used up (see `protect`).
   */
  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] {
    return this.#consume(key, set, cost, false)
  }

  static {
    consumeEntries = (store, key, set, cost) => store.#consume(key, set, cost, true) as readonly PolicyDecision[]
  }

  /** `consume`; with `asEntries`, each outcome made as the Decision's entry for its policy (a `label`). */
  #consume(key: string, set: PolicySet, cost: number, asEntries: boolean): readonly Outcome[] {
    const now = this.#time()
    const plan = this.#planOf(set)
    if (plan.transitions) {
      const outcomes = this.#consumeByTransitions(key, plan, cost, now)
      return asEntries ? outcomes.map((o, i) => entryOf(set.policies[i] as Policy, o)) : outcomes
    }
    let held = this.#entries.get(key)
    if (plan.bare && !(held instanceof Entry)) return this.#consumeBare(key, held, plan, cost, now, asEntries)
    const { policies } = set
    if (policies.length === 2) return this.#consumePair(key, held, plan, cost, now, asEntries)
    const { indices, shifts } = plan
    const planMeters = plan.meters as readonly Meter<Kept>[]
    const outcomes: Outcome[] = new Array(policies.length)
    let allowed = true
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i] as Policy
      const state = live(stateAt(held, indices[i] as number), now)
      const outcome = (planMeters[i] as Meter<Kept>).decide(
        state,
        now + (shifts[i] as number),
        policy,
        cost,
        asEntries ? policy : undefined,
      )
      outcomes[i] = outcome
      if (!outcome.allowed) allowed = false
    }
    if (!allowed) {
      for (let i = 0; i < policies.length; i++) {
        const state = live(stateAt(held, indices[i] as number), now)
        let outcome = outcomes[i] as Outcome
        if (outcome.allowed) {
          const time = now + (shifts[i] as number)
          const policy = policies[i] as Policy
          outcome = (planMeters[i] as Meter<Kept>).decide(state, time, policy, 0, asEntries ? policy : undefined)
          outcomes[i] = outcome
        }
        if (state !== undefined) protect(state, outcome, now)
      }
      return outcomes
    }
    if (held === undefined && !plan.bare) held = this.#newEntry(key, now)
    for (let i = 0; i < policies.length; i++) {
      const index = indices[i] as number
      const stored = stateAt(held, index)
      const outcome = outcomes[i] as Outcome
      const time = now + (shifts[i] as number)
      const state = (planMeters[i] as Meter<Kept>).take(live(stored, now), time, policies[i] as Policy, cost, stored)
      state.expiry = now + outcome.resetAfter
      protect(state, outcome, now)
      if (state !== stored) held = this.#write(key, held, index, state, now)
    }
    return outcomes
  }

  /**
   * The rule above for the store's first policy alone on a key held bare (see `Held`), without
   * the loops. Kept for V8: through the loops, `bench:core`'s "sluice token-bucket, 1 policy" ran
   * 3 069 instructions a decision against 2 559 here (−17 %), and "sluice sliding-window, 1 policy"
   * 2 940 against 2 563 (−13 %) (callgrind, 2026-11-26, bench/README.md).
   */
  #consumeBare(
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
    const state = live(held, now)
    const outcome = meter.decide(state, time, policy, cost, asEntries ? policy : undefined)
    if (!outcome.allowed) {
      if (state !== undefined) protect(state, outcome, now)
      return [outcome]
    }
    const taken = meter.take(state, time, policy, cost, held)
    taken.expiry = now + outcome.resetAfter
    protect(taken, outcome, now)
    if (held === undefined) this.#insert(key, taken, now)
    else if (taken !== held) this.#entries.set(key, taken)
    return [outcome]
  }

  /**
   * The rule above for two policies, unrolled: each policy's state and meter read once, and one
   * call site per meter, which V8 inlines. Kept for V8: through the loops, `bench:core`'s
   * "sluice sliding-log, 2 policies" ran 3 393 instructions a decision against 2 979 here
   * (−12 %; callgrind, 2026-11-26, bench/README.md).
   */
  #consumePair(
    key: string,
    held: Held | undefined,
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
    const firstStored = stateAt(held, firstIndex)
    const secondStored = stateAt(held, secondIndex)
    const firstLive = live(firstStored, now)
    const secondLive = live(secondStored, now)
    const firstLabel = asEntries ? first : undefined
    const secondLabel = asEntries ? second : undefined
    let firstOutcome = firstMeter.decide(firstLive, firstTime, first, cost, firstLabel)
    let secondOutcome = secondMeter.decide(secondLive, secondTime, second, cost, secondLabel)
    if (firstOutcome.allowed && secondOutcome.allowed) {
      const entry = held === undefined ? this.#newEntry(key, now) : this.#entryOf(key, held)
      const firstState = firstMeter.take(firstLive, firstTime, first, cost, firstStored)
      firstState.expiry = now + firstOutcome.resetAfter
      protect(firstState, firstOutcome, now)
      if (firstState !== firstStored) setSlot(entry, firstIndex, firstState)
      const secondState = secondMeter.take(secondLive, secondTime, second, cost, secondStored)
      secondState.expiry = now + secondOutcome.resetAfter
      protect(secondState, secondOutcome, now)
      if (secondState !== secondStored) setSlot(entry, secondIndex, secondState)
      return [firstOutcome, secondOutcome]
    }
    if (firstOutcome.allowed) firstOutcome = firstMeter.decide(firstLive, firstTime, first, 0, firstLabel)
    if (secondOutcome.allowed) secondOutcome = secondMeter.decide(secondLive, secondTime, second, 0, secondLabel)
    if (firstLive !== undefined) protect(firstLive, firstOutcome, now)
    if (secondLive !== undefined) protect(secondLive, secondOutcome, now)
    return [firstOutcome, secondOutcome]
  }

  /**
   * Stores `state` at `index` for the key: bare for the store's first policy on a key not held,
   * else in the key's `Entry` (made from a bare state when the key gets a second). The key as held now.
   */
  #write(key: string, held: Held | undefined, index: number, state: Kept, now: number): Held {
    if (held instanceof Entry) {
      setSlot(held, index, state)
      return held
    }
    if (index === 0) {
      if (held === undefined) this.#insert(key, state, now)
      else this.#entries.set(key, state)
      return state
    }
    const entry = new Entry(held)
    setSlot(entry, index, state)
    if (held === undefined) this.#insert(key, entry, now)
    else this.#entries.set(key, entry)
    return entry
  }

  /** `consume` for a set with a `blockFor` policy: the transitions, on the states as they read them. */
  #consumeByTransitions(key: string, plan: Plan, cost: number, now: number): readonly Outcome[] {
    const { indices } = plan
    let entry = this.#existingEntry(key)
    const result = evaluate(entry && statesOf(entry, plan, now), now, plan.set, cost, plan.shifts)
    const { outcomes } = result
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
    if (entry !== undefined) {
      for (let i = 0; i < indices.length; i++) {
        const state = liveSlot(entry, indices[i] as number, now)
        if (state !== undefined) protect(state, outcomes[i] as Outcome, now)
      }
    }
    return outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] {
    const now = this.#time()
    const held = this.#entries.get(key)
    const plan = this.#planOf(set)
    return set.policies.map((policy, i) => {
      const slot = live(stateAt(held, plan.indices[i] as number), now)
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
      if (next === state) continue
      const index = plan.indices[i] as number
      const stored = slotAt(entry, index) as Kept
      keep(entry, plan, i, next, stored.expiry)
      // Units given back may leave the state used up still: its protection stays until a decision.
      ;(slotAt(entry, index) as Kept).protectedUntil = stored.protectedUntil
    }
  }

  /** Writes every policy's penalized state, with the expiry a consume would give it. */
  penalize(key: string, set: PolicySet, cost: number): void {
    const now = this.#time()
    const plan = this.#planOf(set)
    const { indices } = plan
    let entry = this.#existingEntry(key)
    const states = entry && statesOf(entry, plan, now)
    entry ??= this.#newEntry(key, now)
    for (let i = 0; i < indices.length; i++) {
      const policy = set.policies[i] as Policy
      const time = now + (plan.shifts[i] as number)
      const next = penalize(states?.[i], time, policy, cost)
      const outcome = step(next, time, policy, 0).outcome
      protect(keep(entry, plan, i, next, now + outcome.resetAfter), outcome, now)
    }
  }

  /** Blocks the key in the set's `blockFor` policies, each protected as long. */
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
      const blocking: Blocking = { state: next, expiry, protectedUntil: Math.max(until, expiry) }
      setSlot(entry, indices[i] as number, blocking)
    }
  }

  /**
   * Resets the set's states only: another set's states on the key, and so their protection, stay.
   * The key is forgotten once it has no state left.
   */
  reset(key: string, set: PolicySet): void {
    const held = this.#entries.get(key)
    if (held === undefined) return
    for (const index of this.#planOf(set).indices) {
      const slot = stateAt(held, index)
      // Expired, the state reads as none and protects nothing.
      if (slot !== undefined) slot.expiry = 0
    }
    if (expiresAt(held) === 0) this.#entries.delete(key)
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
      const planMeters = set.policies.map(meterOf)
      // Two policies alike but for their names share one state: taking in place would count twice.
      const inPlace = planMeters.every((meter) => meter !== undefined) && new Set(indices).size === indices.length
      const bare = indices.length === 1 && indices[0] === 0
      const shifts = set.policies.map((policy) => shiftOf(this.#origin, policy))
      plan = { set, indices, meters: planMeters, transitions: !inPlace, bare, shifts }
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

  /** The key's `Entry`: a bare state becomes its first slot (the key keeps its place in the sweep's order). */
  #entryOf(key: string, held: Held): Entry {
    if (held instanceof Entry) return held
    const entry = new Entry(held)
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
      if (!isProtected(held, now)) {
        this.#entries.delete(key)
        return
      }
    }
    this.#warnings.memoryStoreFull(this.maxKeys)
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
 * A named GCRA keeps epoch time whatever its limit: its limit may change under its state (a plan
 * change), and a TAT kept on one limit's time would be read on another's. A warming bucket or
 * GCRA keeps epoch time too: its costs are floats (warm-up.ts).
 */
function shiftOf(origin: number, policy: Policy): number {
  const { algorithm, limit, window } = policy
  if (policy.warmup > 0 || (algorithm === 'gcra' && (window % limit !== 0 || isNamed(policy)))) return origin
  return Math.floor(((origin % window) + window) % window)
}

/** The state stored for the policy at `index`, live or not. */
function slotAt(entry: Entry, index: number): Kept | undefined {
  return index === 0 ? entry.slot0 : index === 1 ? entry.slot1 : entry.more?.[index - 2]
}

/** The state stored for the policy at `index`, live or not, however the key is held. */
function stateAt(held: Held | undefined, index: number): Kept | undefined {
  if (held instanceof Entry) return slotAt(held, index)
  return index === 0 ? held : undefined
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
  if (!(held instanceof Entry)) return held.expiry
  let latest = Math.max(held.slot0?.expiry ?? 0, held.slot1?.expiry ?? 0)
  for (const slot of held.more ?? []) if (slot !== undefined && slot.expiry > latest) latest = slot.expiry
  return latest
}

/**
 * Protection, worked out here alone: a state whose outcome is a denial or leaves nothing
 * remaining is used up, and its key is not evicted until the state is back to full quota
 * (else a flood of new keys would free a limited key); any other outcome lifts it.
 */
function protect(state: Kept, outcome: Outcome, now: number): void {
  state.protectedUntil = !outcome.allowed || outcome.remaining === 0 ? now + outcome.resetAfter : 0
}

/** Whether the key has a live state that is protected (see `protect`): eviction passes it over. */
function isProtected(held: Held, now: number): boolean {
  if (!(held instanceof Entry)) return protects(held, now)
  if (protects(held.slot0, now) || protects(held.slot1, now)) return true
  for (const slot of held.more ?? []) if (protects(slot, now)) return true
  return false
}

function protects(state: Kept | undefined, now: number): boolean {
  return state !== undefined && state.expiry > now && state.protectedUntil > now
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

/** Stores a state a transition (or refund, penalty) returned for the set's policy `i`, with its expiry: the slot kept. */
function keep(entry: Entry, plan: Plan, i: number, state: AlgorithmState, expiry: number): Kept {
  const meter = plan.meters[i]
  const blocking: Blocking | undefined = meter === undefined ? { state, expiry, protectedUntil: 0 } : undefined
  const slot = blocking ?? (meter as Meter<Kept>).fromState(state)
  slot.expiry = expiry
  setSlot(entry, plan.indices[i] as number, slot)
  return slot
}
