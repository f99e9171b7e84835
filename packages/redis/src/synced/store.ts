import { randomUUID } from 'node:crypto'
import {
  type AlgorithmName,
  assertKnownOptions,
  ConfigError,
  containObserve,
  evaluate,
  MemoryStore,
  type Observe,
  type ObserveEvent,
  type Outcome,
  type Policy,
  type PolicySet,
  peekOutcome,
  policySetOf,
  type Store,
  StoreFullError,
  type SyncEvent,
  toMilliseconds,
} from '@sluice/core'
import { type RedisClient, run, type ScriptClient, script, scriptClient } from '../client.js'
import { hashTag } from '../keys.js'
import { assertPrefix } from '../options.js'
import { RedisStore } from '../store.js'
import { geometryOf, PolicyCounters, type SubWindow } from './counters.js'
import { Entries, type Entry } from './entries.js'
import { HEARTBEAT_LUA } from './heartbeat.js'
import { Leases } from './leases.js'
import { slotOf } from './slot.js'
import { EXACT_LUA, PAST_DEADLINE, RESET_LUA, SYNC_LUA, TAKE_BACK_LUA } from './sync-lua.js'

/** Every option `SyncedStore` takes; any other name is a ConfigError with a hint. */
export const SYNCED_STORE_OPTION_NAMES: readonly string[] = [
  'client',
  'prefix',
  'interval',
  'exactAbove',
  'maxKeys',
  'nodeId',
  'now',
  'observe',
  'lease',
]

/** Options of `SyncedStore`: `client`, `prefix`, `interval`, `exactAbove`, `maxKeys`, `nodeId`, `now`, `observe`, `lease`. */
export interface SyncedStoreOptions {
  /** An ioredis or iovalkey `Redis` or `Cluster`, or a node-redis v5 client or cluster (see RedisStore). */
  client: RedisClient
  /** Put before every key. Default `'sluice:'`. Must not contain `{` or `}`. */
  prefix?: string
  /** How often counts go to Redis and come back: ms or a duration such as `'100ms'`. Default 100 ms. */
  interval?: number | string
  /**
   * Share of a limit (0 < exactAbove ≤ 1) from which a key is decided exactly, one script call per
   * request, until its window turns. Default 0.8. With 1 a key goes exact only once denied.
   */
  exactAbove?: number
  /** Keys (per policy set) kept in memory. Default 100 000. */
  maxKeys?: number
  /** This process's id in Redis. Default a random UUID: unique per process. */
  nodeId?: string
  /** Tests only: the clock in epoch ms, used instead of the local clock corrected to Redis `TIME`. */
  now?: () => number
  /**
   * Called with a `sync` event after each sync: how long it took, how many sub-windows it carried,
   * and any error (the same function a limiter's `observe` takes); its exceptions are contained.
   */
  observe?: Observe
  /**
   * Token bucket and GCRA by leasing (default `true`): each node takes grants of units out of the
   * key's state in Redis and spends them locally (see README). `false`: one script call per request.
   */
  lease?: boolean
}

/** Algorithms counted locally; token bucket and GCRA are leased, or go to Redis per request (see README). */
const COUNTED: readonly AlgorithmName[] = ['fixed-window', 'sliding-window']
const BUCKETS: readonly AlgorithmName[] = ['token-bucket', 'gcra']
const SERVED: readonly AlgorithmName[] = Object.freeze([...COUNTED, ...BUCKETS])
const SYNC = script(SYNC_LUA)
const EXACT = script(EXACT_LUA)
const RESET = script(RESET_LUA)
const TAKE_BACK = script(TAKE_BACK_LUA)
const HEARTBEAT = script(HEARTBEAT_LUA)
/** Part of every key: sub-window hashes, apart from RedisStore's `b:` state strings. */
const LAYOUT = 's:'
/** A script call blocks Redis while it runs: big flushes go in parts. */
const MAX_KEYS_PER_CALL = 1000
/** Hashes outlive their last estimate by this much, so a late flush still finds them. */
const KEEP_SLACK_MS = 5000
const HEARTBEAT_EVERY_MS = 1000
/** A node missing this long is not counted alive. */
const NODE_TTL_MS = 5000
/** Heartbeats with the first syncs, spread over the first interval, so nodes started together see each other within it. */
const DISCOVERY_HEARTBEATS = 3
const MAX_BACKOFF_MS = 5000
/** How long an exact decision may wait for Redis before this node decides alone. */
const EXACT_TIMEOUT_MS = 250
/** How long the offset to Redis time from a fast sync is kept before a slower one may replace it. */
const OFFSET_KEPT_MS = 10_000
/** The least time a sync may take before it counts as failed (5 intervals when longer). */
const SYNC_TIMEOUT_MS = 2000

interface Sent {
  readonly counters: PolicyCounters
  readonly window: SubWindow
  /** Milliseconds Redis keeps the hash. */
  readonly keep: number
  readonly admitted: number
  readonly refunded: number
  readonly denied: boolean
}

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
  readonly prefix: string
  readonly nodeId: string
  readonly interval: number
  readonly exactAbove: number
  readonly #client: ScriptClient
  readonly #maxKeys: number
  readonly #now: (() => number) | undefined
  readonly #observe: ((event: ObserveEvent) => void) | undefined
  readonly #exact: RedisStore
  /** Token bucket and GCRA on this node's share while Redis does not answer. */
  readonly #alone: MemoryStore
  readonly #leases: Leases | undefined
  readonly #cluster: boolean
  readonly #entries = new Entries()
  readonly #shares = new Map<string, PolicySet>()
  readonly #counted = new WeakMap<PolicySet, boolean>()
  /** Server time minus local time, from the sync whose reply came back fastest lately. */
  #offset = 0
  /** How far `#offset` may be off (half that sync's round trip); infinite until measured. */
  #offsetError = Number.POSITIVE_INFINITY
  #offsetMeasuredAt = Number.NEGATIVE_INFINITY
  #liveNodes = 1
  #lastSuccess: number
  #lastHeartbeat = Number.NEGATIVE_INFINITY
  #heartbeats = 0
  #failures = 0
  #nextAttempt = 0
  #timer: ReturnType<typeof setInterval> | undefined
  #syncing: Promise<void> | undefined
  /** Exact calls answered as denied on their timeout whose replies are still due. */
  readonly #late = new Set<Promise<void>>()
  #closed = false

  constructor(options: SyncedStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { client: new Redis() }')
    }
    assertKnownOptions(options as unknown as Record<string, unknown>, SYNCED_STORE_OPTION_NAMES, 'SyncedStore')
    const { client, prefix = 'sluice:', interval = 100, exactAbove = 0.8, maxKeys = 100_000, now, observe } = options
    const { lease = true } = options
    const scripts = scriptClient(client)
    assertPrefix(prefix)
    this.interval = toMilliseconds('interval', interval)
    if (typeof exactAbove !== 'number' || !(exactAbove > 0 && exactAbove <= 1)) {
      throw new ConfigError('exactAbove', exactAbove, 'must be a share of the limit above 0 and at most 1, such as 0.8')
    }
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new ConfigError('maxKeys', maxKeys, 'must be a positive whole number')
    }
    const nodeId = options.nodeId ?? randomUUID()
    if (typeof nodeId !== 'string' || nodeId.length === 0 || nodeId.length > 200) {
      throw new ConfigError('nodeId', nodeId, 'must be a non-empty string of at most 200 characters')
    }
    if (now !== undefined && typeof now !== 'function') {
      throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    }
    this.#client = scripts
    this.prefix = prefix
    this.nodeId = nodeId
    this.exactAbove = exactAbove
    this.#maxKeys = maxKeys
    this.#now = now
    this.#observe = containObserve(observe)
    this.#cluster = scripts.cluster
    this.#exact = new RedisStore({ client, prefix, ...(now === undefined ? {} : { now }) })
    this.#alone = new MemoryStore({ maxKeys, ...(now === undefined ? {} : { now }) })
    if (typeof lease !== 'boolean') throw new ConfigError('lease', lease, 'must be true or false')
    this.#leases = lease
      ? new Leases({
          client: scripts,
          redis: this.#exact,
          interval: this.interval,
          maxKeys,
          now,
          timeout: EXACT_TIMEOUT_MS,
          exactly: (key, set, cost) => this.#bucketExactly(key, set, cost),
          alone: (key, set, cost) => this.#alone.consume(key, this.#shareOf(set), cost),
        })
      : undefined
    this.#lastSuccess = this.#localNow()
  }

  /** Nodes seen alive at the last heartbeat (1 before any). */
  get liveNodes(): number {
    return this.#liveNodes
  }

  /** Whether the last syncs failed for long enough that each node enforces only its share. */
  get degraded(): boolean {
    return this.#degradedAt(this.#localNow())
  }

  #degradedAt(local: number): boolean {
    return this.#failures > 0 || local - this.#lastSuccess > Math.max(3 * this.interval, 1000)
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    this.#start()
    if (!this.#countsLocally(set)) return this.#consumeThroughRedis(key, set, cost)
    const local = this.#localNow()
    const now = this.#timeAt(local)
    const entry = this.#entryOf(key, set)
    for (const counters of entry.counters) counters.at(counters.currentStart(now)).asked += cost
    const global = evaluate(this.#states(entry, now, false), now, set, cost)
    if (this.#degradedAt(local)) return this.#decideAlone(entry, set, cost, now, global.outcomes, global.allowed)
    if (!global.allowed) {
      this.#markDenied(entry, now, global.outcomes)
      return global.outcomes
    }
    if (this.#needsExact(entry, now, local, global.outcomes)) return this.#decideExactly(entry, set, cost, now)
    this.#count(entry, now, cost)
    return global.outcomes
  }

  peek(key: string, set: PolicySet): readonly Outcome[] | Promise<readonly Outcome[]> {
    if (!this.#countsLocally(set)) {
      return this.degraded ? this.#alone.peek(key, this.#shareOf(set)) : this.#exact.peek(key, set)
    }
    const now = this.#time()
    const entry = this.#entries.get(key, set)
    const states = entry === undefined ? [] : this.#states(entry, now, false)
    return set.policies.map((policy, i) => peekOutcome(states[i], now, policy))
  }

  /**
   * Takes the cost off this node's own counts, newest sub-window first (what other nodes counted
   * is theirs to refund); other nodes see it at the next sync.
   */
  refund(key: string, set: PolicySet, cost: number, admittedAt?: number): undefined | Promise<void> {
    if (!this.#countsLocally(set)) {
      if (!this.degraded) return this.#exact.refund(key, set, cost, admittedAt)
      this.#alone.refund(key, this.#shareOf(set), cost, admittedAt)
      return undefined
    }
    const entry = this.#entries.get(key, set)
    if (entry === undefined) return undefined
    const now = this.#time()
    for (const counters of entry.counters) {
      let left = cost
      const oldest = counters.currentStart(now) - (counters.geometry.depth - 1) * counters.geometry.span
      for (let i = counters.windows.length - 1; i >= 0 && left > 0; i--) {
        const w = counters.windows[i] as SubWindow
        if (w.start < oldest || w.start > now) continue
        const taken = Math.min(left, w.mine)
        w.refunded += taken
        left -= taken
      }
    }
    return undefined
  }

  /** Starts the key's count again from 0 on every node (in Redis: `o` = the count so far). */
  async reset(key: string, set: PolicySet): Promise<void> {
    this.#leases?.forget(key, set)
    if (!this.#countsLocally(set)) return this.#exact.reset(key, set)
    const now = this.#time()
    const keys: string[] = []
    const entry = this.#entries.get(key, set)
    for (const policy of set.policies) {
      const counters = entry?.counters.find((c) => c.policy === policy) ?? this.#countersOf(key, policy)
      const current = counters.currentStart(now)
      for (let i = 0; i < counters.geometry.depth; i++) {
        const w = counters.at(current - i * counters.geometry.span)
        w.global = 0
        w.mineInGlobal = w.mine
        w.deniedAnywhere = false
        w.deniedHere = false
        keys.push(w.redisKey)
      }
    }
    await run(this.#client, RESET, keys, [])
  }

  /** Sends what is pending (one attempt), leaves the set of live nodes and stops the timer. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
    await this.#syncing
    await this.#leases?.close()
    await withTimeout(Promise.all(this.#late), EXACT_TIMEOUT_MS + SYNC_TIMEOUT_MS).catch(() => undefined)
    await this.#sync(this.#time(), true)
    await run(this.#client, HEARTBEAT, [this.#nodesKey()], [this.nodeId, NODE_TTL_MS, '1']).catch(() => undefined)
  }

  /**
   * Runs one sync now with everything counted so far, and one of the leases (after any sync in
   * flight), resolving when they are done; it never rejects: a failure goes to `observe` and is retried with backoff.
   */
  async flush(): Promise<void> {
    await this.#syncing
    await Promise.all([this.#sync(this.#time(), false), this.#leases?.sync()])
  }

  /** The timer starts with the first decision, never at import or construction; it never keeps a process alive. */
  #start(): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#lastSuccess = this.#localNow()
    this.#timer = setInterval(this.#tick, this.interval)
    this.#timer.unref?.()
    // The first syncs at once and within the first interval: their heartbeats tell this node how
    // many others share the limits, so a fleet started together learns its size before a key fills.
    this.#tick()
    for (let i = 1; i < DISCOVERY_HEARTBEATS; i++)
      setTimeout(this.#tick, (i * this.interval) / DISCOVERY_HEARTBEATS).unref?.()
  }

  readonly #tick = (): void => {
    const local = this.#localNow()
    if (this.#closed || this.#syncing !== undefined || local < this.#nextAttempt) return
    void this.#sync(this.#time(), false)
  }

  /** One sync: every dirty or still-estimated sub-window, in one call per slot (Cluster) or per 1000 keys. */
  #sync(now: number, final: boolean): Promise<void> {
    const started = this.#localNow()
    const groups = this.#collect(now)
    let keys = 0
    for (const group of groups) keys += group.length
    const calls: Promise<unknown>[] = groups.map((group) => this.#send(group))
    // The first syncs each carry a heartbeat while the fleet is being discovered, then one a second.
    const discovering = this.#heartbeats < DISCOVERY_HEARTBEATS
    if (!final && (discovering || started - this.#lastHeartbeat >= HEARTBEAT_EVERY_MS)) calls.push(this.#heartbeat())
    let reported = false
    const report = (error: unknown): void => {
      if (reported) return
      reported = true
      this.#settled(started, keys, error)
    }
    // A reply that comes after the timeout still lands (totals are idempotent); it just is not waited for.
    const tracked: Promise<void> = withTimeout(Promise.all(calls), Math.max(5 * this.interval, SYNC_TIMEOUT_MS))
      .then(() => report(undefined), report)
      .finally(() => {
        if (this.#syncing === tracked) this.#syncing = undefined
      })
    this.#syncing = tracked
    return tracked
  }

  #settled(started: number, keys: number, error: unknown): void {
    const finished = this.#localNow()
    if (error === undefined) {
      this.#failures = 0
      this.#lastSuccess = finished
      this.#nextAttempt = 0
    } else {
      this.#failures++
      this.#nextAttempt = finished + Math.min(this.interval * 2 ** this.#failures, MAX_BACKOFF_MS)
    }
    if (this.#observe === undefined) return
    const event: SyncEvent = { type: 'sync', store: 'synced', durationMs: finished - started, keys }
    this.#observe(error === undefined ? event : { ...event, error })
  }

  #collect(now: number): Sent[][] {
    const groups = new Map<number, Sent[]>()
    this.#entries.sweep((entry) => {
      let kept = false
      for (const counters of entry.counters) {
        counters.prune(now)
        for (const window of counters.windows) {
          kept = true
          if (!window.dirty && !counters.live(window, now)) continue
          const slot = this.#cluster ? slotOf(tagOf(window.redisKey)) : 0
          let group = groups.get(slot)
          if (group === undefined) {
            group = []
            groups.set(slot, group)
          }
          group.push({
            counters,
            window,
            keep: keepFor(counters, window, now),
            admitted: window.admitted,
            refunded: window.refunded,
            denied: window.deniedHere,
          })
        }
      }
      return kept
    })
    const parts: Sent[][] = []
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_KEYS_PER_CALL) parts.push(group.slice(i, i + MAX_KEYS_PER_CALL))
    }
    return parts
  }

  async #send(group: Sent[]): Promise<void> {
    const keys: string[] = []
    const args: (string | number)[] = [`a:${this.nodeId}`, `r:${this.nodeId}`]
    for (const sent of group) {
      keys.push(sent.window.redisKey)
      args.push(sent.admitted, sent.refunded, sent.denied ? '1' : '0', sent.keep)
    }
    const asked = this.#localNow()
    const reply = (await run(this.#client, SYNC, keys, args)) as number[]
    this.#measureOffset(asked, this.#localNow(), (reply[0] as number) * 1000 + Math.floor((reply[1] as number) / 1000))
    for (const [i, sent] of group.entries()) {
      const window = sent.window
      window.sentAdmitted = Math.max(window.sentAdmitted, sent.admitted)
      window.sentRefunded = Math.max(window.sentRefunded, sent.refunded)
      if (sent.denied) window.deniedSent = true
      window.heard(reply[2 + 3 * i] as number, sent.admitted - sent.refunded + (reply[4 + 3 * i] as number))
      sent.counters.heard = true
      if (reply[3 + 3 * i] === 1) window.deniedAnywhere = true
    }
  }

  /**
   * Keeps the offset from the sync with the shortest round trip (a busy event loop that reads a
   * reply late skews the midpoint), and a fresh one once it is 10 s old, as clocks drift.
   */
  #measureOffset(asked: number, answered: number, server: number): void {
    const error = (answered - asked) / 2
    if (error > this.#offsetError && answered - this.#offsetMeasuredAt < OFFSET_KEPT_MS) return
    this.#offset = server - (asked + answered) / 2
    this.#offsetError = error
    this.#offsetMeasuredAt = answered
  }

  /**
   * The Redis time after which the exact script must not count the decision, since this node will
   * have answered it as denied: its timeout, plus how far the offset may be off so a script that
   * runs in time is never refused. 0 (none) on an injected clock or before a sync has measured it.
   */
  #deadline(now: number): number {
    if (this.#now !== undefined || this.#offsetError === Number.POSITIVE_INFINITY) return 0
    return Math.ceil(now + EXACT_TIMEOUT_MS + this.#offsetError)
  }

  async #heartbeat(): Promise<void> {
    this.#lastHeartbeat = this.#localNow()
    this.#heartbeats++
    const live = await run(this.#client, HEARTBEAT, [this.#nodesKey()], [this.nodeId, NODE_TTL_MS, '0'])
    this.#liveNodes = Math.max(1, Number(live))
  }

  /**
   * A key near its limit, or denied anywhere in its current window, is decided per request. "Near"
   * counts what the other nodes are likely to have added unseen (see `PolicyCounters.unseen`), so
   * a key that fills fast goes exact early enough; and before Redis has answered for the key at
   * all, near is `exactAbove` of this node's share (limit ÷ live nodes), since a cold fleet's
   * nodes would otherwise each admit most of the limit before the first sync.
   */
  #needsExact(entry: Entry, now: number, local: number, outcomes: readonly Outcome[]): boolean {
    const all = entry.counters
    for (let i = 0; i < all.length; i++) {
      const counters = all[i] as PolicyCounters
      const { limit } = counters.policy
      if (counters.find(counters.currentStart(now))?.deniedAnywhere === true) return true
      const unseen = counters.unseen(now, this.#liveNodes, this.#staleness(local), this.interval)
      // Until Redis has answered for the key, the others' counts are unknown: this node keeps to its share.
      const threshold = counters.heard ? this.exactAbove * limit : (this.exactAbove * limit) / this.#liveNodes
      if (limit - (outcomes[i] as Outcome).remaining + unseen > threshold) return true
    }
    return false
  }

  /** One EXACT_LUA call; a reply later than EXACT_TIMEOUT_MS or an error is a denial. Never rejects. */
  async #decideExactly(entry: Entry, set: PolicySet, cost: number, now: number): Promise<readonly Outcome[]> {
    const keys: string[] = []
    const args: (string | number)[] = [`a:${this.nodeId}`, `x:${this.nodeId}`, cost, this.#deadline(now)]
    const windows: SubWindow[] = []
    for (const counters of entry.counters) {
      const { span, depth } = counters.geometry
      const current = counters.currentStart(now)
      const mine: number[] = []
      for (let i = depth - 1; i >= 0; i--) {
        const w = counters.at(current - i * span)
        windows.push(w)
        keys.push(w.redisKey)
        mine.push(w.admitted)
      }
      const weight = (current + span - now) / span
      args.push(counters.policy.limit, depth, weight, keepFor(counters, counters.at(current), now), ...mine)
    }
    const sent = windows.map((w) => w.admitted)
    const call = run(this.#client, EXACT, keys, args) as Promise<number[]>
    let reply: number[] | undefined
    try {
      reply = await withTimeout(call, EXACT_TIMEOUT_MS)
    } catch {
      this.#takeBackIfAdmitted(call, entry, now, cost)
    }
    if (reply === undefined || reply[0] === PAST_DEADLINE) {
      // Slow or failing Redis on a key near its limit: deny (the safe side). Once syncs fail too,
      // the node is degraded and decides alone on its share without asking. Not marked denied:
      // the key was not found full, and other nodes would then send its every request to a slow Redis.
      return evaluate(this.#states(entry, now, false), now, set, cost).outcomes.map(deniedAnyway)
    }
    const admitted = reply[0] === 1
    // This node's part of the reply: what it sent, and its exact admissions so far (one in flight may be missing).
    for (const [i, w] of windows.entries()) {
      w.sentAdmitted = Math.max(w.sentAdmitted, sent[i] as number)
      w.heard(reply[1 + i] as number, w.sentAdmitted - w.sentRefunded + w.exact)
    }
    for (const counters of entry.counters) counters.heard = true
    const before = evaluate(this.#states(entry, now, false), now, set, cost)
    if (admitted) {
      for (const counters of entry.counters) {
        const w = counters.at(counters.currentStart(now))
        w.exact += cost
        w.global += cost
        w.mineInGlobal += cost
      }
      return before.allowed ? before.outcomes : before.outcomes.map(admittedAnyway)
    }
    this.#markDenied(entry, now, before.outcomes)
    for (const counters of entry.counters) counters.at(counters.currentStart(now)).deniedSent = true
    return before.allowed ? before.outcomes.map(deniedAnyway) : before.outcomes
  }

  /**
   * A script that ran after its deadline counted nothing; one that ran in time but whose reply came
   * after the timeout (a busy event loop, the offset's error) may have admitted a call the caller
   * was told no. Then this node takes its `x:` back in Redis at once (one small script), so Redis
   * counts only what callers were told was admitted. `close()` waits for these replies.
   */
  #takeBackIfAdmitted(call: Promise<number[]>, entry: Entry, now: number, cost: number): void {
    const keys = entry.counters.map((counters) => counters.keyAt(counters.currentStart(now)))
    const late: Promise<void> = call
      .then(async (reply) => {
        if (reply[0] === 1) await run(this.#client, TAKE_BACK, keys, [`x:${this.nodeId}`, cost])
      })
      .catch(() => undefined)
      .finally(() => this.#late.delete(late))
    this.#late.add(late)
  }

  /**
   * Token bucket and GCRA: from a leased grant (see `Leases`), else exact through `RedisStore`. While
   * the node is degraded, or when a call fails, the key is decided in memory on this node's share
   * of each limit and burst; those decisions are not sent to Redis later (a bucket's refill makes
   * them a function of time, not a total a sync could carry).
   */
  #consumeThroughRedis(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    if (this.degraded) return this.#alone.consume(key, this.#shareOf(set), cost)
    if (this.#leases?.serves(set)) return this.#leases.consume(key, set, cost)
    return this.#bucketExactly(key, set, cost)
  }

  /** One RedisStore decision, waiting at most EXACT_TIMEOUT_MS, then on this node's share. */
  #bucketExactly(key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    return withTimeout(Promise.resolve(this.#exact.consume(key, set, cost)), EXACT_TIMEOUT_MS).catch(() =>
      this.#alone.consume(key, this.#shareOf(set), cost),
    )
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
      this.#markDenied(entry, now, outcomes)
      return outcomes
    }
    const share = evaluate(this.#states(entry, now, true), now, this.#shareOf(set), cost)
    if (!share.allowed) {
      this.#markDenied(entry, now, share.outcomes)
      return share.outcomes
    }
    this.#count(entry, now, cost)
    return outcomes
  }

  /**
   * How old the other nodes' counts may be when this node reads them: up to an interval on their
   * side, and on this side the time since the last sync landed (at least an interval). A busy
   * event loop that delays syncs widens it, and keys go exact sooner.
   */
  #staleness(local: number): number {
    return this.interval + Math.max(this.interval, local - this.#lastSuccess)
  }

  #shareOf(set: PolicySet): PolicySet {
    const live = this.#liveNodes
    const id = `${live}\0${set.id}`
    let share = this.#shares.get(id)
    if (share === undefined) {
      const policies = set.policies.map((p): Policy => shareOf(p, live))
      share = policySetOf(policies, id)
      this.#shares.set(id, share)
    }
    return share
  }

  #count(entry: Entry, now: number, cost: number): void {
    for (const counters of entry.counters) counters.at(counters.currentStart(now)).admitted += cost
  }

  #markDenied(entry: Entry, now: number, outcomes: readonly Outcome[]): void {
    for (const [i, counters] of entry.counters.entries()) {
      if (!(outcomes[i] as Outcome).allowed) counters.at(counters.currentStart(now)).deniedHere = true
    }
  }

  #states(entry: Entry, now: number, own: boolean): unknown[] {
    return entry.counters.map((c) => c.stateAt(now, own))
  }

  #entryOf(key: string, set: PolicySet): Entry {
    let entry = this.#entries.get(key, set)
    if (entry !== undefined) return entry
    if (this.#entries.size >= this.#maxKeys) this.#evict()
    entry = { counters: set.policies.map((policy) => this.#countersOf(key, policy)) }
    this.#entries.set(key, set, entry)
    return entry
  }

  #countersOf(key: string, policy: Policy): PolicyCounters {
    const head = `${this.prefix}{${hashTag(key)}}:${LAYOUT}${policy.id}:`
    return new PolicyCounters(policy, geometryOf(policy), (start) => head + start)
  }

  /**
   * Makes room by forgetting the oldest key whose counts Redis has in full (its global count comes
   * back at the next sync if it is used again). When every key holds unsent counts (Redis down long
   * enough to fill memory), a new key gets a StoreFullError: the limiter's `onStoreError` decides it.
   */
  #evict(): void {
    if (this.#entries.dropFirst((entry) => entry.counters.every((c) => c.windows.every((w) => !w.dirty)))) return
    throw new StoreFullError(`SyncedStore holds ${this.#maxKeys} keys with counts not yet sent to Redis (maxKeys)`)
  }

  #nodesKey(): string {
    return `${this.prefix}{sluice-nodes}:live`
  }

  #localNow(): number {
    return this.#now === undefined ? Date.now() : this.#now()
  }

  /** Window time: the injected clock, or the local clock moved by the offset to Redis `TIME`. */
  #time(): number {
    return this.#timeAt(this.#localNow())
  }

  /** Window time at local time `local`. */
  #timeAt(local: number): number {
    return this.#now === undefined ? Math.floor(local + this.#offset) : local
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

/** Until the last estimate that reads the sub-window, and a margin for late flushes. */
function keepFor(counters: PolicyCounters, window: SubWindow, now: number): number {
  const { span, depth } = counters.geometry
  return Math.max(KEEP_SLACK_MS, Math.ceil(window.start + span * depth - now) + KEEP_SLACK_MS)
}

/**
 * One node's part of a policy: limit ÷ live nodes, rounded down (a window may share 0: the node
 * then admits nothing alone); a bucket keeps at least 1 of rate and burst, as its transitions
 * need, and its burst shrinks in proportion.
 */
function shareOf(policy: Policy, live: number): Policy {
  if (!BUCKETS.includes(policy.algorithm)) return { ...policy, limit: Math.floor(policy.limit / live) }
  return {
    ...policy,
    limit: Math.max(1, Math.floor(policy.limit / live)),
    burst: Math.max(1, Math.floor(policy.burst / live)),
  }
}

function tagOf(redisKey: string): string {
  return redisKey.slice(redisKey.indexOf('{') + 1, redisKey.indexOf('}'))
}

function admittedAnyway(o: Outcome): Outcome {
  return { allowed: true, remaining: 0, resetAfter: o.resetAfter, retryAfter: 0, delay: 0 }
}

function deniedAnyway(o: Outcome): Outcome {
  return { allowed: false, remaining: 0, resetAfter: o.resetAfter, retryAfter: Math.max(1, o.resetAfter), delay: 0 }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // The rejection waits for the I/O phase after the timer's: on a busy event loop a reply that
    // arrived in time is read there, and wins.
    const timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${ms} ms`))), ms)
    timer.unref?.()
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
