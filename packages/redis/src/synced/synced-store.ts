import { type AlgorithmName, MemoryStore, type Policy, type PolicySet, StoreFullError } from '@sluice/core'
import { containObserve } from '@sluice/core/internal'
import { evaluate, type Outcome, peekOutcome, type Store } from '@sluice/core/store'
import { run, type ScriptClient, script, scriptClient } from '../client.js'
import { CLOSE_TIMEOUT_MS, type CloseReport } from '../close-report.js'
import { hashTag } from '../keys.js'
import { RESET_LUA, resetCall, type SentWindow } from '../lua/sync.js'
import { RedisStore } from '../redis-store.js'
import { BUCKETS, BucketPath } from './buckets.js'
import { SyncClock } from './clock.js'
import { Counts, type PolicyCounters, PolicyShape, type SubWindow } from './counters.js'
import { countIn, Entries, type Entry, MAX_USES, markDenied, statesOf } from './entries.js'
import { EXACT_TIMEOUT_MS, ExactPath } from './exact.js'
import { Fleet } from './fleet.js'
import { Shares } from './shares.js'
import { SYNC_TIMEOUT_MS, SyncLoop, WATCH_FROM } from './sync-loop.js'
import { resolveOptions, type SyncedStoreOptions } from './synced-store-options.js'
import { withTimeout } from './timeout.js'

export type { LeaseOptions, SyncedStoreOptions } from './synced-store-options.js'

/** Algorithms counted locally; token bucket and GCRA take the bucket path (see README). */
const COUNTED: readonly AlgorithmName[] = ['fixed-window', 'sliding-window']
const SERVED: readonly AlgorithmName[] = Object.freeze([...COUNTED, ...BUCKETS])
const RESET = script(RESET_LUA)
/** Syncs a new key may wait for room in a full store (Redis answering) before it is a StoreFullError. */
const MAX_ROOM_WAITS = 16
/** Forgotten keys remembered as their counters, as a share of `maxKeys` (see `#evict`). */
const GHOSTS_PER_KEYS = 0.25
/** Part of every key: sub-window hashes, apart from RedisStore's `b:` state strings. */
const LAYOUT = 's:'

/**
 * Local-first counting shared through Redis. Fixed and sliding windows are decided from local
 * counts in the same tick (no promise); in the background one script call per `interval` (per hash
 * slot on a Cluster) sends this node's running totals for every sub-window it counted in and
 * brings back the sum over all nodes. A key near its limit (`exactAbove`) or denied anywhere in its
 * window is decided by a script per request instead, so the overshoot stays bounded; while Redis is
 * unreachable each node enforces limit ÷ live nodes on its own counts and sends them later.
 * Token bucket and GCRA are leased while Redis answers (grants taken from the key's RedisStore
 * state, spent locally; per request through `RedisStore` once the quota is low), and decided on
 * this node's share of each limit (and burst) in memory while it does not. Sliding log is not served.
 */
export class SyncedStore implements Store {
  readonly algorithms = SERVED
  /**
   * Every algorithm it serves keeps a named policy across a change of limit. The counted windows:
   * a named policy's sub-windows are kept under its id, limit left out, and shared by every set
   * holding it (see `Entries`), so each node reads the same global count against the limit it is
   * given. Token bucket and GCRA: leased, exact (RedisStore) and on this node's share alike (see
   * `BucketPath`).
   */
  readonly namedAlgorithms: readonly AlgorithmName[] = SERVED
  /** Fixed windows start at a policy's `offset` (`PolicyCounters.currentStart`), on the clock of `now()`. */
  readonly calendarPeriods = true
  /**
   * Not served: the windows' counts are summed across nodes by sub-windows aligned to the clock
   * (`PolicyCounters`), and a window from each key's first request has no start every node agrees
   * on before a sync; `createLimiter` refuses `start: 'first-request'` (RedisStore serves it).
   */
  readonly firstRequestWindows = false
  /**
   * Warming token buckets and GCRA are decided exactly (one RedisStore script a request, its Lua
   * following warm-up) and, while Redis does not answer, on this node's share in memory, warming
   * too; they are not leased (see `leasable`).
   */
  readonly warmup = true
  readonly prefix: string
  readonly nodeId: string
  readonly interval: number
  readonly exactAbove: number
  readonly #client: ScriptClient
  readonly #maxKeys: number
  readonly #clock: SyncClock
  readonly #fleet: Fleet
  readonly #loop: SyncLoop
  readonly #exact: ExactPath
  readonly #buckets: BucketPath
  readonly #shares: Shares
  readonly #counts = new Counts()
  readonly #entries = new Entries(this.#counts)
  readonly #counted = new WeakMap<PolicySet, boolean>()
  /** Each policy id's shape, shared by every key's counters of that id (ids are few: the limiters' policies). */
  readonly #shapes = new Map<string, PolicyShape>()
  /**
   * Counters forgotten for good so far (ghosts dropped): counters made afterwards take it as their
   * incarnation, so a key counted again after it was forgotten writes fields of its own (see
   * `PolicyCounters.incarnation`).
   */
  #incarnation = 0
  /** Keys evicted so far: whether a sync made room for the decisions waiting for it. */
  #evictions = 0
  /** Counters of keys forgotten (see `#evict`), by key and policy id, oldest first. */
  readonly #ghosts = new Map<string, PolicyCounters>()
  #closing: Promise<CloseReport> | undefined
  /** The sync making room in a full store, while one runs. */
  #room: Promise<void> | undefined
  /** The next such sync, while it waits for the one running. */
  #roomNext: Promise<void> | undefined

  constructor(options: SyncedStoreOptions) {
    const resolved = resolveOptions(options)
    const { client, prefix, maxKeys, now } = resolved
    this.#client = scriptClient(client)
    const observe = containObserve(resolved.observe)
    this.prefix = prefix
    this.nodeId = resolved.nodeId
    this.interval = resolved.interval
    this.exactAbove = resolved.exactAbove
    this.#maxKeys = maxKeys
    this.#shares = new Shares(resolved.weight)
    this.#clock = new SyncClock(now)
    this.#fleet = new Fleet(this.#client, prefix, this.nodeId)
    this.#loop = new SyncLoop(
      this.#client,
      this.nodeId,
      this.interval,
      this.exactAbove,
      this.#entries,
      this.#clock,
      this.#fleet,
      observe,
    )
    this.#exact = new ExactPath(this.#client, this.nodeId, this.#clock, this.interval)
    const clockOption = now === undefined ? {} : { now }
    this.#buckets = new BucketPath(
      new RedisStore({ client, prefix, ...clockOption }),
      new MemoryStore({ maxKeys, ...clockOption }),
      { degraded: () => this.degraded, shareOf: (set) => this.#shareOf(set, undefined) },
      resolved.lease === undefined
        ? undefined
        : {
            client: this.#client,
            interval: this.interval,
            maxKeys,
            now,
            sizing: resolved.lease,
            part: () => this.#shares.fraction(this.#fleet.liveNodes, undefined),
          },
    )
  }

  /** Nodes seen alive at the last heartbeat (1 before any). */
  get liveNodes(): number {
    return this.#fleet.liveNodes
  }

  /** Whether the last syncs failed for long enough that each node enforces only its share. */
  get degraded(): boolean {
    return this.#loop.degradedAt(this.#clock.local())
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    this.#loop.start()
    if (!this.#countsLocally(set)) return this.#buckets.consume(key, set, cost)
    const local = this.#clock.local()
    // Found once for both steps: a decision that waits for the hot keys finds it again after.
    const entry = this.#entries.get(key, set)
    if (this.#readsHotFirst(key, set, entry, local)) {
      return this.#fleet
        .readHot(this.#clock, EXACT_TIMEOUT_MS)
        .then(() => this.#decide(key, set, cost, this.#entries.get(key, set), this.#clock.local()))
    }
    return this.#decide(key, set, cost, entry, local)
  }

  /**
   * A key this node has no count for in its current window may be one another node found hot since
   * this node last read the hot keys (its heartbeat is a second apart): when that read is older
   * than an interval and Redis answers, the decision reads them first (`Fleet.readHot`, one read
   * shared by the decisions waiting for it). A key heard lately, or a read fresh, decides at once.
   */
  #readsHotFirst(key: string, set: PolicySet, entry: Entry | undefined, local: number): boolean {
    if (!this.#fleet.hot.stale(local, this.interval) || this.#loop.degradedAt(local)) return false
    const now = this.#clock.at(local)
    const counters = entry?.counters ?? this.#countersIn(key, set)
    for (let i = 0; i < counters.length; i++) {
      const c = counters[i]
      if (c === undefined || !c.heardIn(now)) return true
    }
    return false
  }

  #decide(
    key: string,
    set: PolicySet,
    cost: number,
    found: Entry | undefined,
    local: number,
  ): readonly Outcome[] | Promise<readonly Outcome[]> {
    let entry = found
    if (entry === undefined) {
      entry = this.#newEntry(key, set)
      // Full of counts Redis has not heard yet: the decision waits for the sync that makes room.
      if (entry === undefined) return this.#makeRoom().then(() => this.#afterRoom(key, set, cost))
    } else if (entry.used < MAX_USES) entry.used++
    const now = this.#clock.at(local)
    const all = entry.counters
    for (let i = 0; i < all.length; i++) {
      const counters = all[i] as PolicyCounters
      // The sync loop's thresholds read the limit of the last decision (two plans may share the counters).
      counters.limit = (set.policies[i] as Policy).limit
      counters.ask(now, cost)
      this.#loop.touch(counters, now)
    }
    const global = evaluate(statesOf(entry, now, false), now, set, cost)
    if (this.#loop.degradedAt(local)) return this.#decideAlone(entry, set, cost, now, global.outcomes, global.allowed)
    if (!global.allowed) {
      markDenied(entry, now, global.outcomes)
      return global.outcomes
    }
    if (this.#needsExact(entry, set, now, local, global.outcomes)) return this.#exact.decide(entry, set, cost, now)
    countIn(entry, now, cost)
    return global.outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] | Promise<readonly Outcome[]> {
    if (!this.#countsLocally(set)) return this.#buckets.peek(key, set)
    const now = this.#clock.time()
    const counters = this.#countersIn(key, set)
    return set.policies.map((policy, i) => peekOutcome(counters[i]?.stateAt(now, false), now, policy))
  }

  /**
   * Takes the cost off this node's own counts (see `PolicyCounters.refund`: with `admittedAt`, on
   * this store's clock, only in the (sub-)window it was admitted in); other nodes see it at the next sync.
   */
  refund(key: string, set: PolicySet, cost: number, admittedAt?: number): undefined | Promise<void> {
    if (!this.#countsLocally(set)) {
      // The bucket path's stores read their local clock; `admittedAt` was read on window time.
      return this.#buckets.refund(
        key,
        set,
        cost,
        admittedAt === undefined ? undefined : this.#clock.toLocal(admittedAt),
      )
    }
    const now = this.#clock.time()
    for (const counters of this.#countersIn(key, set)) {
      if (counters === undefined) continue
      counters.refund(cost, now, admittedAt)
      this.#loop.touch(counters, now)
    }
    return undefined
  }

  /**
   * The clock decisions are made on, epoch ms: the local clock moved by its offset to Redis
   * `TIME` (the injected `now` as it is). The limiter reads `admittedAt` and chooses calendar
   * periods on it, so a period turns when this store's windows do.
   */
  now(): number {
    return this.#clock.time()
  }

  /** Starts the key's count again from 0 on every node (in Redis: `o` = the count so far). */
  async reset(key: string, set: PolicySet): Promise<void> {
    if (!this.#countsLocally(set)) return this.#buckets.reset(key, set)
    const now = this.#clock.time()
    const sent: (SentWindow & { window: SubWindow })[] = []
    const counters = this.#countersIn(key, set)
    /** Counters this node never made (the key was counted elsewhere): they only name the hashes to reset. */
    const namers: PolicyCounters[] = []
    for (const [i, policy] of set.policies.entries()) {
      let policyCounters = counters[i] ?? this.#ghosts.get(ghostId(key, policy.id))
      if (policyCounters === undefined) {
        policyCounters = this.#countersOf(key, policy)
        namers.push(policyCounters)
      }
      for (const window of policyCounters.reset(now)) {
        const { redisKey, admitted, refunded, exact } = window
        const { incarnation } = policyCounters
        sent.push({
          window,
          redisKey,
          incarnation,
          admitted,
          refunded,
          exact,
          keep: policyCounters.keepFor(window, now),
        })
      }
    }
    const { keys, args } = resetCall(this.nodeId, sent)
    try {
      await run(this.#client, RESET, keys, args)
      for (const { window, admitted, refunded, exact } of sent) window.acknowledge(admitted, refunded, exact, false)
    } finally {
      for (const namer of namers) this.#counts.forget(namer)
    }
  }

  /**
   * Sends what is pending, gives back leased grants (one attempt), leaves the set of live nodes and
   * stops the timers. Resolves within CLOSE_TIMEOUT_MS whatever Redis does, saying what did not
   * reach Redis by then (see `CloseReport`).
   */
  close(): Promise<CloseReport> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<CloseReport> {
    let left = false
    const work = Promise.all([
      this.#loop.close(() => this.#exact.settle(EXACT_TIMEOUT_MS + SYNC_TIMEOUT_MS)),
      this.#buckets.close(),
      this.#fleet.leave(CLOSE_TIMEOUT_MS).then((ok) => {
        left = ok
      }),
    ])
    await withTimeout(work, CLOSE_TIMEOUT_MS).catch(() => undefined)
    let unsentKeys = 0
    this.#entries.visitAll((entry) => {
      if (entry.counters.some((c) => c.dirty)) unsentKeys++
    })
    const unreturnedLeases = this.#buckets.unreturned
    return { complete: left && unsentKeys === 0 && unreturnedLeases === 0, unsentKeys, unreturnedLeases, left }
  }

  /**
   * Runs one sync now with everything counted so far, and one of the leases (after any sync in
   * flight), resolving when they are done; it never rejects: a failure goes to `observe` and is
   * retried with backoff.
   */
  async flush(): Promise<void> {
    await Promise.all([this.#loop.flush(), this.#buckets.sync()])
  }

  /**
   * A key near its limit, or denied anywhere in its current window, is decided per request. "Near"
   * counts what the other nodes are likely to have added unseen (see `PolicyCounters.unseen`), so
   * a key that fills fast goes exact early enough; and before Redis has answered for the key at
   * all, near is `exactAbove` of this node's share (limit ÷ live nodes), since a cold fleet's
   * nodes would otherwise each admit most of the limit before the first sync; and a key the fleet
   * found hot (`HotKeys`) is near until this node has heard its count in the current window.
   */
  #needsExact(entry: Entry, set: PolicySet, now: number, local: number, outcomes: readonly Outcome[]): boolean {
    const all = entry.counters
    const live = this.#fleet.liveNodes
    const lag = this.#loop.lagAt(local)
    const { hot } = this.#fleet
    for (let i = 0; i < all.length; i++) {
      const counters = all[i] as PolicyCounters
      const { limit } = set.policies[i] as Policy
      if (counters.deniedAnywhereAt(now)) return true
      // No count heard for this window (a key never counted here, forgotten, or in a window just
      // begun) says nothing of a key another node found hot: Redis has its count.
      if (hot.any && !counters.heardIn(now) && hot.has(counters.id, counters.key, now)) return true
      const unseen = counters.unseen(now, live, this.interval, lag)
      // Until Redis has answered for the key, the others' counts are unknown: this node keeps to its share.
      const threshold = counters.heard ? this.exactAbove * limit : (this.exactAbove * limit) / live
      if (limit - (outcomes[i] as Outcome).remaining + unseen > threshold) return true
    }
    return false
  }

  /** Redis unreachable: admit only within the global estimate and this node's share of each limit. */
  #decideAlone(
    entry: Entry,
    set: PolicySet,
    cost: number,
    now: number,
    outcomes: readonly Outcome[],
    allowed: boolean,
  ): readonly Outcome[] {
    if (!allowed) {
      markDenied(entry, now, outcomes)
      return outcomes
    }
    // Every policy of a key counts the same requests: the first one's traffic tells this node's share.
    const traffic = (entry.counters[0] as PolicyCounters).trafficShare(now)
    const share = evaluate(statesOf(entry, now, true), now, this.#shareOf(set, traffic), cost)
    if (!share.allowed) {
      markDenied(entry, now, share.outcomes)
      return share.outcomes
    }
    countIn(entry, now, cost)
    return outcomes
  }

  #shareOf(set: PolicySet, traffic: number | undefined): PolicySet {
    return this.#shares.of(set, this.#shares.fraction(this.#fleet.liveNodes, traffic))
  }

  /**
   * A new entry for the key, room made by forgetting a key Redis has in full; undefined when every
   * key holds unsent counts and Redis answers (one sync will make room); a StoreFullError when it
   * does not (the limiter's `onStoreError` decides).
   */
  #newEntry(key: string, set: PolicySet): Entry | undefined {
    if (this.#entries.size >= this.#maxKeys) {
      // The key's own ghosts first: making room must not push them out.
      const revived = this.#ghosts.size === 0 ? undefined : this.#revive(key, set)
      if (!this.#evict()) {
        if (revived !== undefined) for (const c of revived) this.#ghosts.set(ghostId(key, c.id), c)
        // A sync merely slow (a loaded machine) still makes room: only a failing Redis refuses.
        if (!this.#loop.failing()) return undefined
        throw this.#full()
      }
      if (revived !== undefined) {
        return this.#entries.add(key, set, (policy) => withId(revived, policy.id) ?? this.#countersOf(key, policy))
      }
    }
    return this.#entries.add(key, set, (policy) => this.#countersOf(key, policy))
  }

  /** Takes the key's ghosts for the set's policies out of the ghost map; undefined when none. */
  #revive(key: string, set: PolicySet): PolicyCounters[] | undefined {
    const revived: PolicyCounters[] = []
    for (const policy of set.policies) {
      const id = ghostId(key, policy.id)
      const ghost = this.#ghosts.get(id)
      if (ghost === undefined) continue
      this.#ghosts.delete(id)
      revived.push(ghost)
    }
    return revived.length === 0 ? undefined : revived
  }

  /**
   * One sync carrying every held change, shared by the decisions waiting for room. It starts after
   * the one running (if any), which may have been sent before this decision's key was counted.
   */
  #makeRoom(): Promise<void> {
    this.#roomNext ??= (this.#room ?? Promise.resolve()).then(() => {
      this.#roomNext = undefined
      const running: Promise<void> = this.#loop.flush().finally(() => {
        if (this.#room === running) this.#room = undefined
      })
      this.#room = running
      return running
    })
    return this.#roomNext
  }

  /**
   * The decision of a key that waited for room. Other waiters may have taken what the sync freed:
   * then another sync, while Redis answers, MAX_ROOM_WAITS at most; after one that freed nothing
   * for anyone, keys that are merely busy may go too (a limited one never does).
   */
  #afterRoom(
    key: string,
    set: PolicySet,
    cost: number,
    waits = 1,
    evictions = -1,
  ): readonly Outcome[] | Promise<readonly Outcome[]> {
    const room = () =>
      this.#entries.get(key, set) !== undefined ||
      this.#entries.size < this.#maxKeys ||
      this.#evict() ||
      (this.#evictions === evictions && this.#evict(true))
    if (room()) return this.consume(key, set, cost)
    if (this.#loop.failing()) throw this.#full()
    if (waits >= MAX_ROOM_WAITS) throw this.#full('every one limited, near its limit or busy')
    const before = this.#evictions
    return this.#makeRoom().then(() => this.#afterRoom(key, set, cost, waits + 1, before))
  }

  #full(why = 'with counts not yet sent to Redis, which does not answer'): StoreFullError {
    return new StoreFullError(`SyncedStore holds ${this.#maxKeys} keys (maxKeys), ${why}`)
  }

  /** Each policy's counters for the key, from the set's entry or whichever set made them; undefined where none. */
  #countersIn(key: string, set: PolicySet): readonly (PolicyCounters | undefined)[] {
    return this.#entries.get(key, set)?.counters ?? set.policies.map((policy) => this.#entries.counters(key, policy.id))
  }

  /**
   * The key's counters for the policy: those it had when it was forgotten, if they are still
   * remembered (see `#evict`), else new ones under the current incarnation.
   */
  #countersOf(key: string, policy: Policy): PolicyCounters {
    const ghost = this.#ghosts.get(ghostId(key, policy.id))
    if (ghost !== undefined) {
      this.#ghosts.delete(ghostId(key, policy.id))
      return ghost
    }
    let shape = this.#shapes.get(policy.id)
    if (shape === undefined) {
      const { prefix } = this
      const tail = `}:${LAYOUT}${policy.id}:`
      shape = new PolicyShape(policy.id, policy, (k, start) => `${prefix}{${hashTag(k)}${tail}${start}`)
      this.#shapes.set(policy.id, shape)
    }
    return this.#counts.make(shape, key, policy.limit, this.#incarnation)
  }

  /**
   * Makes room by forgetting a key Redis has in full, by recency of use (a clock sweep, see
   * `Entries.evictOne`); whether there was one. A key limited or near its limit (a denial in
   * its window, or its count at half of `exactAbove` of the limit: what the sync loop watches) is
   * never forgotten, as MemoryStore never forgets a limited key, so a flood of new keys cannot
   * free it. A forgotten key that had counted something is remembered as its counters (up to
   * GHOSTS_PER_KEYS of `maxKeys`, rounded down, oldest out): used again, it goes on from the global count it
   * last knew and writes to the same fields in Redis. One that is not, or whose ghost went, comes
   * back with its global count at the next sync, and its new counts go to fields of a new
   * incarnation, added to the forgotten ones.
   */
  #evict(wear = false): boolean {
    const now = this.#clock.time()
    const near = WATCH_FROM * this.exactAbove
    const dropped = this.#entries.evictOne(
      (entry) => entry.counters.some((c) => c.pressing(now, near) || c.dirty),
      wear,
    )
    if (dropped === undefined) return false
    this.#evictions++
    const ghosts = Math.floor(this.#maxKeys * GHOSTS_PER_KEYS)
    for (const counters of dropped.forgotten) {
      counters.prune(now)
      // Nothing an estimate reads: new counters write to hashes of their own anyway.
      if (!counters.kept || ghosts === 0) {
        if (counters.kept) this.#incarnation++
        this.#counts.forget(counters)
        continue
      }
      if (this.#ghosts.size >= ghosts) {
        const oldest = this.#ghosts.entries().next()
        if (oldest.done !== true) {
          this.#ghosts.delete(oldest.value[0])
          this.#counts.forget(oldest.value[1])
          this.#incarnation++
        }
      }
      this.#ghosts.set(ghostId(dropped.key, counters.id), counters)
    }
    return true
  }

  /** Whether every policy of the set is a window this store counts locally (once per set). */
  #countsLocally(set: PolicySet): boolean {
    let counted = this.#counted.get(set)
    if (counted === undefined) {
      counted = set.policies.every((p) => COUNTED.includes(p.algorithm))
      this.#counted.set(set, counted)
    }
    return counted
  }
}

function withId(all: readonly PolicyCounters[], id: string): PolicyCounters | undefined {
  for (const counters of all) if (counters.id === id) return counters
  return undefined
}

/** A ghost's id: key and policy id, split by the first NUL (set ids and policy ids have none). */
function ghostId(key: string, id: string): string {
  return `${id}\0${key}`
}
