import type { AlgorithmName, Policy } from '@sluice/core'
import { windowStart } from '@sluice/core/store'

/** No sub-windows: shared by every counters that hold none. */
const NONE: readonly SubWindow[] = Object.freeze([])

const DENIED_HERE = 1
const DENIED_SENT = 2
const DENIED_ANYWHERE = 4

const HEARD = 1
const PENDING = 2

/** Hashes outlive their last estimate by this much, so a late flush still finds them. */
const KEEP_SLACK_MS = 5000

/**
 * A sub-window's refunds and exact admissions, with what Redis acknowledged of them: most keys are
 * far from their limit and refund nothing, and a sub-window holds none of it (24 bytes a
 * sub-window, `pnpm bench:memory`).
 */
class Rarer {
  refunded = 0
  exact = 0
  sentRefunded = 0
  sentExact = 0
}

/**
 * What a sub-window knows of the other nodes' growth: most keys are counted on one node, where all
 * of it stays 0 and a sub-window holds none of it (32 bytes a sub-window, `pnpm bench:memory`).
 */
class OthersGrowth {
  /** See `SubWindow.othersRate`. */
  rate = 0
  /** See `SubWindow.othersFloor`. */
  floor = 0
  /** The others' count the rate is measured from (heard at `SubWindow`'s base time). */
  base = 0
}

/**
 * One sub-window of one policy for one key (for a fixed window, the window itself): this node's
 * running totals, what Redis holds of them, and the global count at the last reply.
 */
export class SubWindow {
  /** This node's running total of local admissions: it only grows. */
  admitted = 0
  /** The part of it Redis has acknowledged. */
  sentAdmitted = 0
  /** Refunds and exact admissions (see `Rarer`), made the first time either is not 0. */
  #rarer: Rarer | undefined
  /** DENIED_HERE, DENIED_SENT and DENIED_ANYWHERE: one field for three flags (16 bytes a sub-window, `pnpm bench:memory`). */
  #denials = 0
  /** Σ over nodes at the last reply, and this node's part of it then. */
  global = 0
  mineInGlobal = 0
  /** Units asked for here (admitted or not): this node's offered load, to project the others'. */
  asked = 0
  /** Window time at which the last reply's sync was sent (what the global count is as of). */
  heardAt = Number.NEGATIVE_INFINITY
  /** The others' growth, made the first time any of it is not 0 (see `OthersGrowth`). */
  #others: OthersGrowth | undefined
  /** When the others' count the rate is measured from was heard. */
  #baseAt: number

  constructor(
    /** Names the hash (see `redisKey`). */
    readonly owner: { keyAt(start: number): string },
    readonly start: number,
  ) {
    this.#baseAt = start
  }

  /** This node's running total of refunds: it only grows. */
  get refunded(): number {
    return this.#rarer?.refunded ?? 0
  }

  /** Admitted by exact decisions (Redis counted them in this node's `x:` field): it only grows. */
  get exact(): number {
    return this.#rarer?.exact ?? 0
  }

  /** The part of `refunded` Redis has acknowledged. */
  get sentRefunded(): number {
    return this.#rarer?.sentRefunded ?? 0
  }

  /** The part of `exact` Redis has acknowledged. */
  get sentExact(): number {
    return this.#rarer?.sentExact ?? 0
  }

  #rare(): Rarer {
    this.#rarer ??= new Rarer()
    return this.#rarer
  }

  /** How fast the other nodes' count grew (units per ms), from the last two replies: a projection of what they add unseen. */
  get othersRate(): number {
    return this.#others?.rate ?? 0
  }

  set othersRate(rate: number) {
    if (rate !== 0 || this.#others !== undefined) this.#growth().rate = rate
  }

  /**
   * The others' count as this node knew it when Redis became unreachable or lost its keys: their
   * counts stay in the estimate until a reply shows Redis holds at least as much of them again (a
   * Redis restarted empty otherwise reports only what the nodes that resent first have sent).
   */
  get othersFloor(): number {
    return this.#others?.floor ?? 0
  }

  set othersFloor(floor: number) {
    if (floor !== 0 || this.#others !== undefined) this.#growth().floor = floor
  }

  #growth(): OthersGrowth {
    this.#others ??= new OthersGrowth()
    return this.#others
  }

  /** Denied here (a decision on this node found the sub-window full). */
  get deniedHere(): boolean {
    return (this.#denials & DENIED_HERE) !== 0
  }

  /** Redis holds this node's denial. */
  get deniedSent(): boolean {
    return (this.#denials & DENIED_SENT) !== 0
  }

  /** A node denied in this sub-window, as the last reply said. */
  get deniedAnywhere(): boolean {
    return (this.#denials & DENIED_ANYWHERE) !== 0
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
    let others = global - mine
    if (this.othersFloor > 0) {
      if (others >= this.othersFloor) this.othersFloor = 0
      else others = this.othersFloor
    }
    if (at - this.#baseAt >= interval) {
      this.othersRate = Math.max(0, others - (this.#others?.base ?? 0)) / (at - this.#baseAt)
      if (others !== 0 || this.#others !== undefined) this.#growth().base = others
      this.#baseAt = at
    }
    this.heardAt = Math.max(this.heardAt, at)
    this.global = mine + others
    this.mineInGlobal = mine
    if (deniedAnywhere) this.#denials |= DENIED_ANYWHERE
  }

  /** Redis holds these totals of this node's now (and its denial, when `denied`). */
  acknowledge(admitted: number, refunded: number, exact: number, denied: boolean): void {
    this.sentAdmitted = Math.max(this.sentAdmitted, admitted)
    const rarer = this.#rarer
    if (rarer !== undefined) {
      rarer.sentRefunded = Math.max(rarer.sentRefunded, refunded)
      rarer.sentExact = Math.max(rarer.sentExact, exact)
    }
    if (denied) this.#denials |= DENIED_SENT
  }

  /** Redis may lose its keys (unreachable) or has (restarted empty): the others' count known now stays counted. */
  holdOthers(): void {
    this.othersFloor = Math.max(this.othersFloor, this.global - this.mineInGlobal)
  }

  /** Redis lost its keys: nothing of this node's is there any more, so all of it is news again. */
  forgetSent(): void {
    this.sentAdmitted = 0
    if (this.#rarer !== undefined) {
      this.#rarer.sentRefunded = 0
      this.#rarer.sentExact = 0
    }
    this.#denials &= ~DENIED_SENT
  }

  /** Units asked for here, admitted or not. */
  ask(cost: number): void {
    this.asked += cost
  }

  /** Admitted by a local decision. */
  count(cost: number): void {
    this.admitted += cost
  }

  /** Admitted by an exact decision: Redis counted it already. */
  countExact(cost: number): void {
    const rarer = this.#rare()
    rarer.exact += cost
    rarer.sentExact += cost
    this.global += cost
    this.mineInGlobal += cost
  }

  /** Takes up to `cost` off this node's count; returns what it took. */
  refund(cost: number): number {
    const taken = Math.min(cost, this.mine)
    if (taken !== 0) this.#rare().refunded += taken
    return taken
  }

  /** Denied here; `sent` when the exact script has already told Redis. */
  deny(sent = false): void {
    this.#denials |= sent ? DENIED_HERE | DENIED_SENT : DENIED_HERE
  }

  /** The count starts again from 0 on every node (Redis's `o` takes the sum off). */
  reset(): void {
    this.othersFloor = 0
    this.global = 0
    this.mineInGlobal = this.mine
    this.#denials &= DENIED_SENT
  }

  /** This node's net count. */
  get mine(): number {
    return this.admitted + this.exact - this.refunded
  }

  /** The global count as far as this node knows: the last reply plus what it counted since. */
  get estimate(): number {
    return this.global - this.mineInGlobal + this.mine
  }

  /** Something Redis has not heard yet. */
  get dirty(): boolean {
    return (
      this.admitted > this.sentAdmitted ||
      this.refunded > this.sentRefunded ||
      this.exact > this.sentExact ||
      (this.deniedHere && !this.deniedSent)
    )
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
}

/**
 * One policy's sub-windows for one key, oldest first; older ones stay only while unsent. One per
 * key and policy id on a node, shared by every set holding a policy of that id (see `Entries`):
 * a named policy's id leaves out its limit, so sets of two plans count in the same sub-windows.
 * It keeps only what the id fixes (algorithm, geometry, where windows start); the limit a
 * decision reads is its set's policy's.
 */
export class PolicyCounters {
  /**
   * Replaced, not grown, when a sub-window is added or dropped, by `slice` and `concat`, which
   * allocate what they hold: `push`, spread and `filter` leave spare room (16 slots on an array
   * grown by one): 136 bytes a key of `pnpm bench:memory`'s SyncedStore rows.
   */
  windows: readonly SubWindow[] = NONE
  /**
   * The limit of the last decision here, for the sync loop's thresholds (which key to watch, which
   * may hold its news); a plan change moves it with the first decision under the new limit.
   */
  limit: number
  /** How many entries (key and set) hold these counters; the store forgets them with the last. */
  holders = 0
  /** HEARD and PENDING: one field for two flags (8 bytes a key and policy, `pnpm bench:memory`). */
  #flags = 0
  /** Window time of the last decision on this key here. */
  usedAt = Number.NEGATIVE_INFINITY
  /**
   * Units asked for here in the newest sub-window dropped so far, and its start: this node's offered
   * rate there is the first over the span (a count, not the rate: V8 boxes a fractional field, 16
   * bytes a key and policy).
   */
  #lastAsked = 0
  #lastAskedStart = Number.NEGATIVE_INFINITY

  constructor(
    readonly shape: PolicyShape,
    /** The key counted. */
    readonly key: string,
    /** The limit of the first decision (see `limit`). */
    limit: number,
    /**
     * Which of this node's fields in those hashes hold these counters' running totals (see
     * `FIELD_LUA`): counters made again for a key the store forgot start from 0, so they must not
     * write where the forgotten ones' larger totals are.
     */
    readonly incarnation = 0,
  ) {
    this.limit = limit
  }

  /** Redis has answered for this key (a sync or an exact call) since this node began counting it. */
  get heard(): boolean {
    return (this.#flags & HEARD) !== 0
  }

  set heard(heard: boolean) {
    this.#flags = heard ? this.#flags | HEARD : this.#flags & ~HEARD
  }

  /** Waiting in the sync loop's list of what changed here since the last sync. */
  get pending(): boolean {
    return (this.#flags & PENDING) !== 0
  }

  set pending(pending: boolean) {
    this.#flags = pending ? this.#flags | PENDING : this.#flags & ~PENDING
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

  /** The sub-window starting at `start`, made if missing (kept in start order). */
  at(start: number): SubWindow {
    const { windows } = this
    const newest = windows[windows.length - 1]
    if (newest !== undefined && newest.start === start) return newest
    for (let i = windows.length - 1; i >= 0; i--) {
      const w = windows[i] as SubWindow
      if (w.start === start) return w
      if (w.start < start) {
        const made = new SubWindow(this, start)
        // A hot key stays hot: the new sub-window starts from the last one's rate.
        made.othersRate = w.othersRate
        this.windows = windows.slice(0, i + 1).concat(made, windows.slice(i + 1))
        return made
      }
    }
    const made = new SubWindow(this, start)
    this.windows = [made].concat(windows)
    return made
  }

  /** Whether Redis has answered for the key's current sub-window at `now` (a sync or an exact call heard its count). */
  heardIn(now: number): boolean {
    const current = this.find(this.currentStart(now))
    return current !== undefined && current.heardAt > Number.NEGATIVE_INFINITY
  }

  find(start: number): SubWindow | undefined {
    const { windows } = this
    for (let i = windows.length - 1; i >= 0; i--) if ((windows[i] as SubWindow).start === start) return windows[i]
    return undefined
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
    const start = this.currentStart(now)
    const current = this.find(start)
    const previous = this.find(start - this.geometry.span)
    const { span } = this.geometry
    const elapsed = now - start
    let rate: number
    if (previous !== undefined) rate = ((current?.asked ?? 0) + previous.asked) / (elapsed + span)
    else if (this.#lastAskedStart >= start - 2 * span)
      rate = ((current?.asked ?? 0) + this.#lastAsked) / (elapsed + span)
    // No history: the rate so far in this sub-window, over at least an interval.
    else rate = (current?.asked ?? 0) / Math.max(elapsed, interval)
    const since = now - Math.max(current?.heardAt ?? start, start)
    const staleness = interval + lag + Math.max(interval, since)
    const byRate = (liveNodes - 1) * rate * staleness
    const byGrowth = (current?.othersRate ?? 0) * staleness
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
      if (counted === undefined) return
      const admittedIn = this.currentStart(admittedAt)
      // A fixed window gives back only in the window of the admission; a sliding window's newest sub-window stands for later times.
      const into = this.algorithm === 'sliding-window' ? Math.min(admittedIn, counted.start) : admittedIn
      if (into >= oldest) this.find(into)?.refund(cost)
      return
    }
    let left = cost
    for (let i = this.windows.length - 1; i >= 0 && left > 0; i--) {
      const w = this.windows[i] as SubWindow
      if (w.start >= oldest && w.start <= now) left -= w.refund(left)
    }
  }

  /** The newest sub-window up to `now` that this node admitted into (what core's state starts at). */
  #newestCounted(now: number): SubWindow | undefined {
    for (let i = this.windows.length - 1; i >= 0; i--) {
      const w = this.windows[i] as SubWindow
      if (w.start <= now && w.admitted + w.exact > 0) return w
    }
    return undefined
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
    let mine = 0
    let global = 0
    for (const w of this.windows) {
      if (!this.live(w, now)) continue
      mine += w.mineInGlobal
      global += w.global
    }
    return global > 0 ? Math.min(1, Math.max(0, mine / global)) : undefined
  }

  /** The start of the sub-window holding `now` (a fixed window's: where the core transition starts it, `offset` included). */
  currentStart(now: number): number {
    return windowStart(now, this.shape.aligned)
  }

  /** Whether a sub-window still weighs in an estimate at `now`. */
  live(w: SubWindow, now: number): boolean {
    const { span, depth } = this.geometry
    return w.start + span * depth > now
  }

  /**
   * Units counted or refunded here that Redis has not acknowledged; infinite when a denial is
   * unsent or a sub-window other than the current one (at `now`) holds news.
   */
  unsent(now: number): number {
    const current = this.currentStart(now)
    let units = 0
    for (const w of this.windows) {
      if (!w.dirty) continue
      if (w.start !== current || (w.deniedHere && !w.deniedSent)) return Number.POSITIVE_INFINITY
      units += w.admitted - w.sentAdmitted + w.refunded - w.sentRefunded + w.exact - w.sentExact
    }
    return units
  }

  /** Drops sub-windows that no estimate reads and Redis has heard in full. */
  prune(now: number): void {
    const { windows } = this
    let kept = 0
    for (let i = windows.length - 1; i >= 0; i--) {
      const w = windows[i] as SubWindow
      if (!this.live(w, now) && !w.dirty) {
        if (w.start > this.#lastAskedStart) {
          this.#lastAsked = w.asked
          this.#lastAskedStart = w.start
        }
      } else kept++
    }
    if (kept < windows.length)
      this.windows = kept === 0 ? NONE : windows.filter((w) => this.live(w, now) || w.dirty).slice()
  }

  /**
   * Whether the key is limited or near its limit at `now`: a denial in a sub-window an estimate
   * reads, or those sub-windows' counts summed at `near` of the limit or more.
   */
  pressing(now: number, near: number): boolean {
    let total = 0
    for (const w of this.windows) {
      if (!this.live(w, now)) continue
      if (w.deniedAnywhere || w.deniedHere) return true
      total += w.estimate
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
    const newest = this.windows[this.windows.length - 1]
    if (newest !== undefined && newest.start > start && newest.start - start <= span * (depth - 1)) start = newest.start
    const counts: number[] = []
    for (let i = depth - 1; i >= 0; i--) counts.push(this.#countAt(start - i * span, own))
    return { start, counts }
  }

  #countAt(start: number, own: boolean): number {
    const w = this.find(start)
    return w === undefined ? 0 : own ? w.mine : w.estimate
  }
}
