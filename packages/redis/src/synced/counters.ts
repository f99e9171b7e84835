import type { AlgorithmName, Policy } from '@sluice/core'
import { windowStart } from '@sluice/core/store'
import { Slab } from './slab.js'

/** Hashes outlive their last estimate by this much, so a late flush still finds them. */
const KEEP_SLACK_MS = 5000

/** No row: the end of a key's list of sub-windows. */
const NONE = -1

// A sub-window's row (see `SubWindow`): its numbers, the key's next older sub-window, its flags.
const START = 0
const ADMITTED = 1
const SENT_ADMITTED = 2
const GLOBAL = 3
const MINE_IN_GLOBAL = 4
const ASKED = 5
const HEARD_AT = 6
const BASE_AT = 7
const OLDER = 0
const FLAGS = 0
const DENIED_HERE = 1
const DENIED_SENT = 2
const DENIED_ANYWHERE = 4
const HAS_RARER = 8
const HAS_OTHERS = 16

// A key's counters of one policy id (see `PolicyCounters`).
const LIMIT = 0
const USED_AT = 1
const LAST_ASKED = 2
const LAST_ASKED_START = 3
const FIRST_ASKED_AT = 4
const NEWEST = 0
const INCARNATION = 1
const HOLDERS = 2
const HEARD = 1
const PENDING = 2

/**
 * A sub-window's refunds and exact admissions, with what Redis acknowledged of them: most keys are
 * far from their limit and refund nothing, and their rows hold none of it.
 */
class Rarer {
  refunded = 0
  exact = 0
  sentRefunded = 0
  sentExact = 0
}

/**
 * What a sub-window knows of the other nodes' growth: most keys are counted on one node, where all
 * of it stays 0 and their rows hold none of it.
 */
class OthersGrowth {
  /** See `SubWindow.othersRate`. */
  rate = 0
  /** See `SubWindow.othersFloor`. */
  floor = 0
  /** The others' count the rate is measured from (heard at the sub-window's base time). */
  base = 0
}

/**
 * Every key's counts on a node, with no object per key: a row per key and policy id
 * (`PolicyCounters`) and one per sub-window (`SubWindow`) in two slabs, the rare parts of a
 * sub-window (refunds, exact admissions, the others' growth) in maps by row, made the first time
 * they are not 0. An object per sub-window and per key's policy held 5× what MemoryStore holds for
 * the same key (`pnpm bench:memory`, SyncedStore rows); the classes below are handles made on use.
 */
export class Counts {
  readonly windows = new Slab({ floats: 8, ints: 1, bytes: 1 })
  readonly rows = new Slab({ floats: 5, ints: 3, bytes: 1 })
  readonly #rarer = new Map<number, Rarer>()
  readonly #others = new Map<number, OthersGrowth>()

  /** New counters of `key` under `shape`, from 0 (see `PolicyCounters` for `limit` and `incarnation`). */
  make(shape: PolicyShape, key: string, limit: number, incarnation = 0): PolicyCounters {
    const { rows } = this
    const row = rows.alloc()
    rows.setF(row, LIMIT, limit)
    rows.setF(row, USED_AT, Number.NEGATIVE_INFINITY)
    rows.setF(row, LAST_ASKED_START, Number.NEGATIVE_INFINITY)
    rows.setF(row, FIRST_ASKED_AT, Number.POSITIVE_INFINITY)
    rows.setI(row, NEWEST, NONE)
    rows.setI(row, INCARNATION, incarnation)
    return new PolicyCounters(this, row, shape, key)
  }

  /**
   * The counters in `row`, made by `make` for `key` and `shape` and not forgotten: whoever keeps a
   * row knows them (an entry its key and its set's policies), so the row does not hold them.
   */
  counters(row: number, shape: PolicyShape, key: string): PolicyCounters {
    return new PolicyCounters(this, row, shape, key)
  }

  /** Forgets the counters and their sub-windows: their rows are reused, and handles to them are stale. */
  forget(counters: PolicyCounters): void {
    if (counters.stale) return
    for (let w = this.rows.i(counters.row, NEWEST); w !== NONE; ) {
      const older = this.windows.i(w, OLDER)
      this.dropWindow(w)
      w = older
    }
    this.rows.free(counters.row)
  }

  dropWindow(w: number): void {
    const flags = this.windows.b(w, FLAGS)
    if ((flags & HAS_RARER) !== 0) this.#rarer.delete(w)
    if ((flags & HAS_OTHERS) !== 0) this.#others.delete(w)
    this.windows.free(w)
  }

  /** Sub-window `w`'s refunds and exact admissions, when any was ever counted. */
  rarerOf(w: number): Rarer | undefined {
    return (this.windows.b(w, FLAGS) & HAS_RARER) === 0 ? undefined : this.#rarer.get(w)
  }

  rareOf(w: number): Rarer {
    let rarer = this.rarerOf(w)
    if (rarer === undefined) {
      rarer = new Rarer()
      this.#rarer.set(w, rarer)
      this.windows.setB(w, FLAGS, this.windows.b(w, FLAGS) | HAS_RARER)
    }
    return rarer
  }

  /** Sub-window `w`'s knowledge of the others' growth, when any was ever not 0. */
  othersOf(w: number): OthersGrowth | undefined {
    return (this.windows.b(w, FLAGS) & HAS_OTHERS) === 0 ? undefined : this.#others.get(w)
  }

  growthOf(w: number): OthersGrowth {
    let others = this.othersOf(w)
    if (others === undefined) {
      others = new OthersGrowth()
      this.#others.set(w, others)
      this.windows.setB(w, FLAGS, this.windows.b(w, FLAGS) | HAS_OTHERS)
    }
    return others
  }

  /** Sub-window `w`'s net count of this node's. */
  mine(w: number): number {
    const rarer = this.rarerOf(w)
    const admitted = this.windows.f(w, ADMITTED)
    return rarer === undefined ? admitted : admitted + rarer.exact - rarer.refunded
  }

  /** Sub-window `w`'s global count as far as this node knows: the last reply plus what it counted since. */
  estimate(w: number): number {
    return this.windows.f(w, GLOBAL) - this.windows.f(w, MINE_IN_GLOBAL) + this.mine(w)
  }

  /** Sub-window `w` holds something Redis has not heard yet. */
  dirty(w: number): boolean {
    const { windows } = this
    if (windows.f(w, ADMITTED) > windows.f(w, SENT_ADMITTED)) return true
    const flags = windows.b(w, FLAGS)
    if ((flags & DENIED_HERE) !== 0 && (flags & DENIED_SENT) === 0) return true
    const rarer = this.rarerOf(w)
    return rarer !== undefined && (rarer.refunded > rarer.sentRefunded || rarer.exact > rarer.sentExact)
  }

  denied(w: number, flag: number): boolean {
    return (this.windows.b(w, FLAGS) & flag) !== 0
  }

  /** Units asked for in sub-window `w` here, admitted or not. */
  ask(w: number, cost: number): void {
    this.windows.setF(w, ASKED, this.windows.f(w, ASKED) + cost)
  }

  /** Admitted into sub-window `w` by a local decision. */
  count(w: number, cost: number): void {
    this.windows.setF(w, ADMITTED, this.windows.f(w, ADMITTED) + cost)
  }
}

/**
 * One sub-window of one policy for one key (for a fixed window, the window itself): this node's
 * running totals, what Redis holds of them, and the global count at the last reply. A handle on
 * its row in `Counts`, made on use; one kept across an await (a call in flight) is `stale` once
 * its row was freed, and then writes nothing.
 */
export class SubWindow {
  readonly #counts: Counts
  readonly #w: Slab
  readonly #gen: number

  constructor(
    /** The key's counters it belongs to: they name its hash (see `redisKey`). */
    readonly owner: PolicyCounters,
    readonly row: number,
  ) {
    this.#counts = owner.counts
    this.#w = owner.counts.windows
    this.#gen = this.#w.gen(row)
  }

  /** Its row was freed (the key dropped it, or was forgotten) since this handle was made. */
  get stale(): boolean {
    return this.#w.gen(this.row) !== this.#gen
  }

  get start(): number {
    return this.#w.f(this.row, START)
  }

  /** This node's running total of local admissions: it only grows. */
  get admitted(): number {
    return this.#w.f(this.row, ADMITTED)
  }

  /** The part of it Redis has acknowledged. */
  get sentAdmitted(): number {
    return this.#w.f(this.row, SENT_ADMITTED)
  }

  /** Σ over nodes at the last reply. */
  get global(): number {
    return this.#w.f(this.row, GLOBAL)
  }

  /** This node's part of `global`. */
  get mineInGlobal(): number {
    return this.#w.f(this.row, MINE_IN_GLOBAL)
  }

  /** Units asked for here (admitted or not): this node's offered load, to project the others'. */
  get asked(): number {
    return this.#w.f(this.row, ASKED)
  }

  /** Window time at which the last reply's sync was sent (what the global count is as of). */
  get heardAt(): number {
    return this.#w.f(this.row, HEARD_AT)
  }

  /** This node's running total of refunds: it only grows. */
  get refunded(): number {
    return this.#counts.rarerOf(this.row)?.refunded ?? 0
  }

  /** Admitted by exact decisions (Redis counted them in this node's `x:` field): it only grows. */
  get exact(): number {
    return this.#counts.rarerOf(this.row)?.exact ?? 0
  }

  /** The part of `refunded` Redis has acknowledged. */
  get sentRefunded(): number {
    return this.#counts.rarerOf(this.row)?.sentRefunded ?? 0
  }

  /** The part of `exact` Redis has acknowledged. */
  get sentExact(): number {
    return this.#counts.rarerOf(this.row)?.sentExact ?? 0
  }

  /** How fast the other nodes' count grew (units per ms), from the last two replies: a projection of what they add unseen. */
  get othersRate(): number {
    return this.#counts.othersOf(this.row)?.rate ?? 0
  }

  set othersRate(rate: number) {
    if (rate !== 0 || this.#counts.othersOf(this.row) !== undefined) this.#counts.growthOf(this.row).rate = rate
  }

  /**
   * The others' count as this node knew it when Redis became unreachable or lost its keys: their
   * counts stay in the estimate until a reply shows Redis holds at least as much of them again (a
   * Redis restarted empty otherwise reports only what the nodes that resent first have sent).
   */
  get othersFloor(): number {
    return this.#counts.othersOf(this.row)?.floor ?? 0
  }

  set othersFloor(floor: number) {
    if (floor !== 0 || this.#counts.othersOf(this.row) !== undefined) this.#counts.growthOf(this.row).floor = floor
  }

  /** Denied here (a decision on this node found the sub-window full). */
  get deniedHere(): boolean {
    return this.#counts.denied(this.row, DENIED_HERE)
  }

  /** Redis holds this node's denial. */
  get deniedSent(): boolean {
    return this.#counts.denied(this.row, DENIED_SENT)
  }

  /** A node denied in this sub-window, as the last reply said. */
  get deniedAnywhere(): boolean {
    return this.#counts.denied(this.row, DENIED_ANYWHERE)
  }

  /** The Redis key of this sub-window's hash, built when a call names it (per key it would be most of the key's memory). */
  get redisKey(): string {
    return this.owner.keyAt(this.start)
  }

  /**
   * Records a reply to a call sent at window time `at`: the global count, this node's part of it,
   * and whether a node denied in this sub-window. The others' rate is their growth over at least
   * `interval` ms (they send once an interval: a shorter span sees a batch or nothing), measured
   * from the sub-window's start, when every count was 0.
   */
  heard(global: number, mine: number, deniedAnywhere: boolean, at: number, interval: number): void {
    if (this.stale) return
    const w = this.#w
    const { row } = this
    let others = global - mine
    const floor = this.othersFloor
    if (floor > 0) {
      if (others >= floor) this.othersFloor = 0
      else others = floor
    }
    const baseAt = w.f(row, BASE_AT)
    if (at - baseAt >= interval) {
      const growth = this.#counts.othersOf(row)
      this.othersRate = Math.max(0, others - (growth?.base ?? 0)) / (at - baseAt)
      if (others !== 0 || growth !== undefined) this.#counts.growthOf(row).base = others
      w.setF(row, BASE_AT, at)
    }
    w.setF(row, HEARD_AT, Math.max(w.f(row, HEARD_AT), at))
    w.setF(row, GLOBAL, mine + others)
    w.setF(row, MINE_IN_GLOBAL, mine)
    if (deniedAnywhere) this.#flag(DENIED_ANYWHERE)
  }

  /** Redis holds these totals of this node's now (and its denial, when `denied`). */
  acknowledge(admitted: number, refunded: number, exact: number, denied: boolean): void {
    if (this.stale) return
    this.#w.setF(this.row, SENT_ADMITTED, Math.max(this.sentAdmitted, admitted))
    const rarer = this.#counts.rarerOf(this.row)
    if (rarer !== undefined) {
      rarer.sentRefunded = Math.max(rarer.sentRefunded, refunded)
      rarer.sentExact = Math.max(rarer.sentExact, exact)
    }
    if (denied) this.#flag(DENIED_SENT)
  }

  /** Redis may lose its keys (unreachable) or has (restarted empty): the others' count known now stays counted. */
  holdOthers(): void {
    this.othersFloor = Math.max(this.othersFloor, this.global - this.mineInGlobal)
  }

  /** Redis lost its keys: nothing of this node's is there any more, so all of it is news again. */
  forgetSent(): void {
    this.#w.setF(this.row, SENT_ADMITTED, 0)
    const rarer = this.#counts.rarerOf(this.row)
    if (rarer !== undefined) {
      rarer.sentRefunded = 0
      rarer.sentExact = 0
    }
    this.#w.setB(this.row, FLAGS, this.#w.b(this.row, FLAGS) & ~DENIED_SENT)
  }

  /** Admitted by a local decision. */
  count(cost: number): void {
    this.#counts.count(this.row, cost)
  }

  /** Admitted by an exact decision: Redis counted it already. */
  countExact(cost: number): void {
    if (this.stale) return
    const rarer = this.#counts.rareOf(this.row)
    rarer.exact += cost
    rarer.sentExact += cost
    this.#w.setF(this.row, GLOBAL, this.global + cost)
    this.#w.setF(this.row, MINE_IN_GLOBAL, this.mineInGlobal + cost)
  }

  /** Takes up to `cost` off this node's count; returns what it took. */
  refund(cost: number): number {
    const taken = Math.min(cost, this.mine)
    if (taken !== 0) this.#counts.rareOf(this.row).refunded += taken
    return taken
  }

  /** Denied here; `sent` when the exact script has already told Redis. */
  deny(sent = false): void {
    if (this.stale) return
    this.#flag(sent ? DENIED_HERE | DENIED_SENT : DENIED_HERE)
  }

  /** The count starts again from 0 on every node (Redis's `o` takes the sum off). */
  reset(): void {
    this.othersFloor = 0
    this.#w.setF(this.row, GLOBAL, 0)
    this.#w.setF(this.row, MINE_IN_GLOBAL, this.mine)
    this.#w.setB(this.row, FLAGS, this.#w.b(this.row, FLAGS) & ~(DENIED_HERE | DENIED_ANYWHERE))
  }

  /** This node's net count. */
  get mine(): number {
    return this.#counts.mine(this.row)
  }

  /** The global count as far as this node knows: the last reply plus what it counted since. */
  get estimate(): number {
    return this.#counts.estimate(this.row)
  }

  /** Something Redis has not heard yet. */
  get dirty(): boolean {
    return this.#counts.dirty(this.row)
  }

  #flag(flag: number): void {
    this.#w.setB(this.row, FLAGS, this.#w.b(this.row, FLAGS) | flag)
  }
}

/** How a policy is counted: sub-windows of `span` ms, `depth` of them in one estimate. */
export interface Geometry {
  readonly span: number
  readonly depth: number
}

export function geometryOf(policy: Policy): Geometry {
  return policy.algorithm === 'sliding-window'
    ? { span: policy.window / policy.precision, depth: policy.precision + 1 }
    : { span: policy.window, depth: 1 }
}

/**
 * What every key's counters of one policy id share on a node: how the policy is counted (what the
 * id fixes) and where its hashes are, so a key's counters hold only the key and their counts.
 */
export class PolicyShape {
  readonly algorithm: AlgorithmName
  readonly geometry: Geometry
  /** Sub-windows as `windowStart` reads them: `span` long, starting at the policy's `offset` (a calendar period's start). */
  readonly aligned: Pick<Policy, 'window' | 'offset'>
  /** The window time `startAt` was last asked, and its answer. */
  #lastNow = Number.NaN
  #lastStart = Number.NaN

  constructor(
    /** The policy id counters of this shape are kept under. */
    readonly id: string,
    policy: Policy,
    /** The Redis key of the hash of `key`'s sub-window starting at `start`. */
    readonly keyAt: (key: string, start: number) => string,
  ) {
    this.algorithm = policy.algorithm
    this.geometry = geometryOf(policy)
    this.aligned = { window: this.geometry.span, offset: policy.offset }
  }

  /**
   * The start of the sub-window holding `now`. A decision asks it of each step (five or six
   * times), and every key of the policy asks it at the same window time until the clock moves on
   * (whole ms): the last answer is kept.
   */
  startAt(now: number): number {
    if (now !== this.#lastNow) {
      this.#lastStart = windowStart(now, this.aligned)
      this.#lastNow = now
    }
    return this.#lastStart
  }
}

/**
 * One policy's sub-windows for one key; older ones stay only while unsent. One per key and policy
 * id on a node, shared by every set holding a policy of that id (see `Entries`): a named policy's
 * id leaves out its limit, so sets of two plans count in the same sub-windows. It keeps only what
 * the id fixes (algorithm, geometry, where windows start); the limit a decision reads is its set's
 * policy's. A handle on its row in `Counts` (made by `Counts.make`), like `SubWindow`; its
 * sub-windows are a list from the newest back.
 */
export class PolicyCounters {
  readonly #rows: Slab
  readonly #w: Slab
  readonly #gen: number

  constructor(
    readonly counts: Counts,
    readonly row: number,
    readonly shape: PolicyShape,
    /** The key counted. */
    readonly key: string,
  ) {
    this.#rows = counts.rows
    this.#w = counts.windows
    this.#gen = this.#rows.gen(row)
  }

  /** Its row was freed (the key was forgotten) since this handle was made. */
  get stale(): boolean {
    return this.#rows.gen(this.row) !== this.#gen
  }

  /**
   * Which of this node's fields in those hashes hold these counters' running totals (see
   * `FIELD_LUA`): counters made again for a key the store forgot start from 0, so they must not
   * write where the forgotten ones' larger totals are.
   */
  get incarnation(): number {
    return this.#rows.i(this.row, INCARNATION)
  }

  /**
   * The limit of the last decision here, for the sync loop's thresholds (which key to watch, which
   * may hold its news); a plan change moves it with the first decision under the new limit.
   */
  get limit(): number {
    return this.#rows.f(this.row, LIMIT)
  }

  set limit(limit: number) {
    this.#rows.setF(this.row, LIMIT, limit)
  }

  /** How many entries (key and set) hold these counters; the store forgets them with the last. */
  get holders(): number {
    return this.#rows.i(this.row, HOLDERS)
  }

  set holders(holders: number) {
    this.#rows.setI(this.row, HOLDERS, holders)
  }

  /** Window time of the last decision on this key here. */
  get usedAt(): number {
    return this.#rows.f(this.row, USED_AT)
  }

  set usedAt(at: number) {
    this.#rows.setF(this.row, USED_AT, at)
  }

  /** Redis has answered for this key (a sync or an exact call) since this node began counting it. */
  get heard(): boolean {
    return (this.#rows.b(this.row, 0) & HEARD) !== 0
  }

  set heard(heard: boolean) {
    this.#setFlag(HEARD, heard)
  }

  /** Waiting in the sync loop's list of what changed here since the last sync. */
  get pending(): boolean {
    return (this.#rows.b(this.row, 0) & PENDING) !== 0
  }

  set pending(pending: boolean) {
    this.#setFlag(PENDING, pending)
  }

  #setFlag(flag: number, on: boolean): void {
    if (this.stale) return
    const flags = this.#rows.b(this.row, 0)
    this.#rows.setB(this.row, 0, on ? flags | flag : flags & ~flag)
  }

  /** The policy id these counters are kept under. */
  get id(): string {
    return this.shape.id
  }

  get algorithm(): AlgorithmName {
    return this.shape.algorithm
  }

  get geometry(): Geometry {
    return this.shape.geometry
  }

  /** The Redis key of the hash for the sub-window starting at `start`. */
  keyAt(start: number): string {
    return this.shape.keyAt(this.key, start)
  }

  /** The sub-windows, oldest first: a new array, for what visits them all (syncs, tests). */
  get windows(): SubWindow[] {
    const all: SubWindow[] = []
    for (let w = this.#newest(); w !== NONE; w = this.#w.i(w, OLDER)) all.push(new SubWindow(this, w))
    return all.reverse()
  }

  /** Whether any sub-window is kept. */
  get kept(): boolean {
    return this.#newest() !== NONE
  }

  /** Whether any sub-window holds something Redis has not heard yet. */
  get dirty(): boolean {
    for (let w = this.#newest(); w !== NONE; w = this.#w.i(w, OLDER)) if (this.counts.dirty(w)) return true
    return false
  }

  #newest(): number {
    return this.#rows.i(this.row, NEWEST)
  }

  /**
   * The sub-window starting at `start`, made if missing (kept in start order). Making one first
   * drops those no estimate at `start` reads and Redis has in full, so their rows are reused now
   * rather than at the key's next sync: the slab holds a key's live sub-windows, not every one it
   * had since (SyncedStore busy-keys rows of `pnpm bench:memory`).
   */
  at(start: number): SubWindow {
    return new SubWindow(this, this.#made(start))
  }

  /** A decision here at `now` asked for `cost` units, admitted or not. */
  ask(now: number, cost: number): void {
    this.counts.ask(this.#made(this.currentStart(now)), cost)
    if (now < this.#rows.f(this.row, FIRST_ASKED_AT)) this.#rows.setF(this.row, FIRST_ASKED_AT, now)
  }

  /** A local decision at `now` admitted `cost` units. */
  count(now: number, cost: number): void {
    this.counts.count(this.#made(this.currentStart(now)), cost)
  }

  /** Whether a node denied in the sub-window holding `now`, as the last reply said. */
  deniedAnywhereAt(now: number): boolean {
    const row = this.#rowAt(this.currentStart(now))
    return row !== NONE && this.counts.denied(row, DENIED_ANYWHERE)
  }

  /** The row of the sub-window starting at `start`, made if missing (see `at`). */
  #made(start: number): number {
    const existing = this.#rowAt(start)
    if (existing !== NONE) return existing
    this.prune(start)
    const w = this.#w
    let newer = NONE
    let older = this.#newest()
    while (older !== NONE && w.f(older, START) > start) {
      newer = older
      older = w.i(older, OLDER)
    }
    const made = w.alloc()
    w.setF(made, START, start)
    w.setF(made, HEARD_AT, Number.NEGATIVE_INFINITY)
    w.setF(made, BASE_AT, start)
    w.setI(made, OLDER, older)
    if (newer === NONE) this.#rows.setI(this.row, NEWEST, made)
    else w.setI(newer, OLDER, made)
    // A hot key stays hot: the new sub-window starts from the last one's rate.
    const rate = older === NONE ? 0 : (this.counts.othersOf(older)?.rate ?? 0)
    if (rate !== 0) this.counts.growthOf(made).rate = rate
    return made
  }

  /** Whether Redis has answered for the key's current sub-window at `now` (a sync or an exact call heard its count). */
  heardIn(now: number): boolean {
    const current = this.#rowAt(this.currentStart(now))
    return current !== NONE && this.#w.f(current, HEARD_AT) > Number.NEGATIVE_INFINITY
  }

  find(start: number): SubWindow | undefined {
    const row = this.#rowAt(start)
    return row === NONE ? undefined : new SubWindow(this, row)
  }

  #rowAt(start: number): number {
    const w = this.#w
    for (let row = this.#newest(); row !== NONE; row = w.i(row, OLDER)) {
      const at = w.f(row, START)
      if (at === start) return row
      if (at < start) return NONE
    }
    return NONE
  }

  /**
   * Units the other nodes probably added that this node has not heard of yet: the larger of their
   * rate as the last replies showed it and this node's own offered rate times the other live
   * nodes (a balancer spreads load evenly), over the time since the count was last heard (at
   * least an interval: what they counted since their last sync) plus `lag` (how late this
   * machine's timers and replies run). A key not used here for a while is decided on its last
   * count plus this growth, so a stale key near its limit goes exact.
   */
  unseen(now: number, liveNodes: number, interval: number, lag: number): number {
    const w = this.#w
    const start = this.currentStart(now)
    const { span } = this.geometry
    const current = this.#rowAt(start)
    const previous = this.#rowAt(start - span)
    const asked = current === NONE ? 0 : w.f(current, ASKED)
    // This node's offered rate over the last sub-window and this one (this one alone with no
    // history), from the key's first request here when that came later: a key that turned busy
    // mid-window is not averaged over the quiet time before (15 a second begun 8 s into a 10 s
    // window read as 3, and each node admitted locally what the other had).
    let total = asked
    let from = start
    if (previous !== NONE) {
      total += w.f(previous, ASKED)
      from -= span
    } else if (this.#rows.f(this.row, LAST_ASKED_START) >= start - 2 * span) {
      total += this.#rows.f(this.row, LAST_ASKED)
      from -= span
    }
    const firstAsked = this.#rows.f(this.row, FIRST_ASKED_AT)
    // Over at least an interval and the lag: a starved process decides its requests in bursts, and
    // a burst's rate is not its traffic's (a key asked once would read as one an interval).
    const rate = total / Math.max(now - Math.max(from, firstAsked), interval + lag)
    // Never heard in this sub-window: the others' unseen time begins with their traffic, as this
    // node's did (a balancer spreads it), not with the sub-window.
    const since = now - Math.max(current === NONE ? start : w.f(current, HEARD_AT), start, firstAsked)
    const staleness = interval + lag + Math.max(interval, since)
    const byRate = (liveNodes - 1) * rate * staleness
    const byGrowth = (current === NONE ? 0 : (this.counts.othersOf(current)?.rate ?? 0)) * staleness
    return Math.max(byRate, byGrowth)
  }

  /**
   * Whether a sync should read this sub-window: it has news for Redis, or it is the current one,
   * or it is past but other nodes may still send to it (until `settle` ms after its end).
   */
  wanted(w: SubWindow, now: number, settle: number): boolean {
    if (w.dirty) return true
    const end = w.start + this.geometry.span
    return end > now || (this.live(w, now) && w.heardAt < end + settle)
  }

  /**
   * Takes the cost off this node's own counts (what other nodes counted is theirs to refund), by
   * core's refund rules: newest live sub-window first; with `admittedAt`, only off the sub-window
   * the request was counted in, while it is live (the newest one counted in when `admittedAt` lies
   * past it: a clock read just after the admission).
   */
  refund(cost: number, now: number, admittedAt: number | undefined): void {
    const { span, depth } = this.geometry
    const oldest = this.currentStart(now) - (depth - 1) * span
    if (admittedAt !== undefined) {
      const counted = this.#newestCounted(now)
      if (counted === NONE) return
      const admittedIn = this.currentStart(admittedAt)
      // A fixed window gives back only in the window of the admission; a sliding window's newest sub-window stands for later times.
      const into = this.algorithm === 'sliding-window' ? Math.min(admittedIn, this.#w.f(counted, START)) : admittedIn
      if (into >= oldest) this.find(into)?.refund(cost)
      return
    }
    let left = cost
    for (let row = this.#newest(); row !== NONE && left > 0; row = this.#w.i(row, OLDER)) {
      const start = this.#w.f(row, START)
      if (start >= oldest && start <= now) left -= new SubWindow(this, row).refund(left)
    }
  }

  /** The newest sub-window up to `now` that this node admitted into (what core's state starts at). */
  #newestCounted(now: number): number {
    const w = this.#w
    for (let row = this.#newest(); row !== NONE; row = w.i(row, OLDER)) {
      if (w.f(row, START) > now) continue
      const rarer = this.counts.rarerOf(row)
      if (w.f(row, ADMITTED) + (rarer?.exact ?? 0) > 0) return row
    }
    return NONE
  }

  /** Starts every sub-window of the estimate at `now` again from 0; those sub-windows. */
  reset(now: number): SubWindow[] {
    const { span, depth } = this.geometry
    const current = this.currentStart(now)
    const reset: SubWindow[] = []
    for (let i = 0; i < depth; i++) {
      const w = this.at(current - i * span)
      w.reset()
      reset.push(w)
    }
    return reset
  }

  /** Milliseconds Redis keeps a sub-window's hash: until the last estimate that reads it, and a margin for late flushes. */
  keepFor(window: SubWindow, now: number): number {
    const { span, depth } = this.geometry
    return Math.max(KEEP_SLACK_MS, Math.ceil(window.start + span * depth - now) + KEEP_SLACK_MS)
  }

  /**
   * This node's part of the key's traffic as the last replies reported it: its count over the
   * global count, summed over the sub-windows an estimate at `now` reads; undefined when Redis
   * reported none.
   */
  trafficShare(now: number): number | undefined {
    const w = this.#w
    let mine = 0
    let global = 0
    for (let row = this.#newest(); row !== NONE; row = w.i(row, OLDER)) {
      if (!this.#liveAt(row, now)) continue
      mine += w.f(row, MINE_IN_GLOBAL)
      global += w.f(row, GLOBAL)
    }
    return global > 0 ? Math.min(1, Math.max(0, mine / global)) : undefined
  }

  /** The start of the sub-window holding `now` (a fixed window's: where the core transition starts it, `offset` included). */
  currentStart(now: number): number {
    return this.shape.startAt(now)
  }

  /** Whether a sub-window still weighs in an estimate at `now`. */
  live(w: SubWindow, now: number): boolean {
    return this.#liveAt(w.row, now)
  }

  #liveAt(row: number, now: number): boolean {
    const { span, depth } = this.geometry
    return this.#w.f(row, START) + span * depth > now
  }

  /**
   * Units counted or refunded here that Redis has not acknowledged; infinite when a denial is
   * unsent or a sub-window other than the current one (at `now`) holds news.
   */
  unsent(now: number): number {
    const current = this.currentStart(now)
    let units = 0
    for (let row = this.#newest(); row !== NONE; row = this.#w.i(row, OLDER)) {
      if (!this.counts.dirty(row)) continue
      const w = new SubWindow(this, row)
      if (w.start !== current || (w.deniedHere && !w.deniedSent)) return Number.POSITIVE_INFINITY
      units += w.admitted - w.sentAdmitted + w.refunded - w.sentRefunded + w.exact - w.sentExact
    }
    return units
  }

  /** Drops sub-windows that no estimate reads and Redis has heard in full: their rows are reused. */
  prune(now: number): void {
    if (this.stale) return
    const w = this.#w
    const rows = this.#rows
    let newer = NONE
    let row = this.#newest()
    while (row !== NONE) {
      const older = w.i(row, OLDER)
      if (this.#liveAt(row, now) || this.counts.dirty(row)) newer = row
      else {
        const start = w.f(row, START)
        if (start > rows.f(this.row, LAST_ASKED_START)) {
          rows.setF(this.row, LAST_ASKED, w.f(row, ASKED))
          rows.setF(this.row, LAST_ASKED_START, start)
        }
        if (newer === NONE) rows.setI(this.row, NEWEST, older)
        else w.setI(newer, OLDER, older)
        this.counts.dropWindow(row)
      }
      row = older
    }
  }

  /**
   * Whether the key is limited or near its limit at `now`: a denial in a sub-window an estimate
   * reads, or those sub-windows' counts summed at `near` of the limit or more.
   */
  pressing(now: number, near: number): boolean {
    const { counts } = this
    let total = 0
    for (let row = this.#newest(); row !== NONE; row = this.#w.i(row, OLDER)) {
      if (!this.#liveAt(row, now)) continue
      if (counts.denied(row, DENIED_ANYWHERE | DENIED_HERE)) return true
      total += counts.estimate(row)
    }
    return total >= near * this.limit
  }

  /** The core algorithm's state built from the global estimates, for the transitions in core. */
  stateAt(now: number, own = false): unknown {
    let start = this.currentStart(now)
    if (this.algorithm !== 'sliding-window') return { start, count: this.#countAt(start, own) }
    const { span, depth } = this.geometry
    // Window time that stepped back up to a window reads the counts where they are, as if no time
    // passed (core's rule for a stored start ahead of the clock): a spent quota stays spent.
    const newest = this.#newest()
    if (newest !== NONE) {
      const newestStart = this.#w.f(newest, START)
      if (newestStart > start && newestStart - start <= span * (depth - 1)) start = newestStart
    }
    // Core reads the counts oldest first, the i-th sub-window back from `start` at depth - 1 - i.
    // The key's rows (newest first, a few) are walked down to the oldest the estimate reads, each
    // put where its start is, rather than every place looking for its row. An array made at its
    // length, not push and reverse (V8 called the push builtin for each count read from the slab):
    // bench:core-synced, SyncedStore sliding-window, 1 policy, 1000 keys, 12 018 → 10 668
    // instructions a decision.
    const counts = new Array<number>(depth)
    for (let i = 0; i < depth; i++) counts[i] = 0
    const oldest = start - (depth - 1) * span
    for (let row = newest; row !== NONE; row = this.#w.i(row, OLDER)) {
      const at = this.#w.f(row, START)
      if (at < oldest) break
      const back = Math.round((start - at) / span)
      if (back >= 0 && start - back * span === at) counts[depth - 1 - back] = this.#count(row, own)
    }
    return { start, counts }
  }

  #countAt(start: number, own: boolean): number {
    const row = this.#rowAt(start)
    return row === NONE ? 0 : this.#count(row, own)
  }

  #count(row: number, own: boolean): number {
    return own ? this.counts.mine(row) : this.counts.estimate(row)
  }
}
