import type { ObserveEvent, SyncEvent } from '@sluice/core'
import { run, type ScriptClient, script } from '../client.js'
import { type HeardWindow, readSync, SYNC_LUA, syncCall } from '../lua/sync.js'
import type { SyncClock } from './clock.js'
import type { PolicyCounters, SubWindow } from './counters.js'
import type { Entries } from './entries.js'
import { DISCOVERY_HEARTBEATS, type Fleet } from './fleet.js'
import { slotOf } from './slot.js'
import { watchQuiet } from './timeout.js'

const SYNC = script(SYNC_LUA)
/** A script call blocks Redis while it runs: big flushes go in parts. */
const MAX_KEYS_PER_CALL = 1000
/**
 * A big sync's calls go a few at a time, the next as one answers: Redis stays busy with them, while
 * a call of another kind on the connection (an exact decision, a hot-key read) waits behind a few,
 * not hundreds, and only the calls out hold what they carry.
 */
const MAX_KEYS_IN_FLIGHT = 4 * MAX_KEYS_PER_CALL
const MAX_BACKOFF_MS = 5000
/**
 * The most one late tick counts as lag: a starved process's timers run seconds late, and the
 * backlog it decides after the stall is as stale as that; a longer gap is a sleep or a pause (a
 * laptop's lid, a debugger), and with the lag decaying by a tenth a tick it would make busy keys
 * exact for long after.
 */
const MAX_LAG_MS = 5000
/** The least time a sync may go without any reply before it counts as failed (5 intervals when longer). */
export const SYNC_TIMEOUT_MS = 2000

/**
 * A sync in flight, told apart from a stalled one by its progress: a big sync (hundreds of calls)
 * takes seconds while Redis, busy but healthy, answers its calls one after another; a Redis that
 * stopped (SIGSTOP, killed, a dead link) answers none. So the clock that says "too long" restarts
 * at each reply of the sync, not only when it was sent.
 */
interface InFlight {
  /** Monotonic ms at which the sync was sent or a call of it last answered. */
  answeredAt: number
  /** No call of it answered for max(3 × interval, 1 s): the node decides on its share meanwhile. */
  stalled: boolean
}

interface Sent {
  readonly counters: PolicyCounters
  readonly window: SubWindow
  /** Milliseconds Redis keeps the hash. */
  readonly keep: number
  readonly admitted: number
  readonly refunded: number
  readonly exact: number
  readonly denied: boolean
}

/** Entries a sync visits to drop what no estimate reads any more: memory is swept a slice at a time. */
const SWEPT_PER_SYNC = 256
/** A key near its limit is read at every sync for this long after its last decision here. */
const WATCH_MS = 1000
/** Share of `exactAbove × limit` from which a key used here lately is watched, and below which its changes may be held. */
export const WATCH_FROM = 0.5
/**
 * A key far from its limit may hold its changes this long per live node (a tenth of its sub-window
 * at most) and up to this many units before a sync carries them: a cool key then costs Redis about
 * one read and write a second across the fleet, not one per request, however many nodes share its
 * traffic (each node sees its part: with 4 nodes and a 1 s hold, nearly every request was a sync of
 * its own, `bench/README.md`). A killed process loses at most these units on such a key.
 */
const HOLD_MS = 1000
const HOLD_UNITS = 4
/** Only sub-windows at least this long hold changes: a hold is then a small part of their life. */
const HOLD_SPAN_MS = 10 * HOLD_MS

/**
 * The background loop. Every `interval` one script call (per hash slot on a Cluster, per 1000
 * sub-windows) sends what changed here since the last sync (the running totals of the keys decided
 * here) and brings back their sums over all nodes, with the keys near their limit that were used
 * here lately; a key not used keeps its last count (see `PolicyCounters.unseen`). An idle node
 * sends only its heartbeat. Failures back off exponentially up to 5 s.
 */
export class SyncLoop {
  #failures = 0
  #nextAttempt = 0
  /** The client had no connection when the last sync failed: once it has one again, the backoff is over. */
  #failedDisconnected = false
  /** The wall clock stepped: the next sync carries a heartbeat, whose reply measures the offset again. */
  #measureNow = false
  /** The latest sync sent, until it settles. */
  #inFlight: InFlight | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  #syncing: Promise<void> | undefined
  #closed = false
  /**
   * Counters decided here since the last sync (each once: `pending`), and the window time each was
   * first decided at since (kept here, not on every key's counters: only changed keys have one).
   */
  #changed: PolicyCounters[] = []
  #changedSince: number[] = []
  /** Counters used here lately whose count is near their limit, by row: read at every sync while so. */
  readonly #watched = new Map<number, PolicyCounters>()
  #lastTick = Number.NEGATIVE_INFINITY
  /** Degraded since the last good sync: the others' counts known when it began are held. */
  #outage = false
  /** Redis lost its keys since the last collect: what is to be sent again has not been sent yet. */
  #resendDue = false
  /** How late the timer fires lately (ms beyond the interval, decaying): the machine's load. */
  #lag = 0

  constructor(
    readonly client: ScriptClient,
    readonly nodeId: string,
    readonly interval: number,
    readonly exactAbove: number,
    readonly entries: Entries,
    readonly clock: SyncClock,
    readonly fleet: Fleet,
    readonly observe: ((event: ObserveEvent) => void) | undefined,
  ) {}

  /**
   * Whether this node decides alone on its share: the client says it is not connected, the last
   * sync failed, or the one in flight has had no reply for too long (see `InFlight`).
   */
  degradedAt(local: number): boolean {
    const degraded = this.#failures > 0 || !this.client.connected() || this.#inFlight?.stalled === true
    if (degraded && !this.#outage) this.#holdOthers(this.clock.at(local))
    return degraded
  }

  /** Whether the last sync failed or the client has no connection (a sync merely slow is not). */
  failing(): boolean {
    return this.#failures > 0 || !this.client.connected()
  }

  /**
   * How late this machine's timers run (ms) at local time `local`: lately, or now, when the timer
   * is overdue (a starved event loop deciding a backlog before its timer fires). The others'
   * unsent counts may be that much older too: the load is the machine's.
   */
  lagAt(local: number): number {
    if (this.#lastTick === Number.NEGATIVE_INFINITY) return this.#lag
    return Math.max(this.#lag, local - this.#lastTick - this.interval)
  }

  /** A decision here on `counters` at window time `now`: the next sync carries it. */
  touch(counters: PolicyCounters, now: number): void {
    // Counters forgotten while a call carrying them was out: their row is another key's now.
    if (counters.stale) return
    counters.usedAt = now
    if (counters.pending) return
    counters.pending = true
    this.#changed.push(counters)
    this.#changedSince.push(now)
  }

  /** Counters whose news did not reach Redis: the next sync carries them again (unless forgotten since). */
  #retouch(counters: PolicyCounters): void {
    if (!counters.stale) this.touch(counters, counters.usedAt)
  }

  /** The timer starts with the first decision, never at import or construction; it never keeps a process alive. */
  start(): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#timer = setInterval(this.#tick, this.interval)
    this.#timer.unref?.()
    // The first syncs at once and within the first interval: their heartbeats tell this node how
    // many others share the limits, so a fleet started together learns its size before a key fills.
    this.#tick()
    for (let i = 1; i < DISCOVERY_HEARTBEATS; i++)
      setTimeout(this.#tick, (i * this.interval) / DISCOVERY_HEARTBEATS).unref?.()
  }

  /** Runs one sync after any in flight; never rejects. */
  async flush(): Promise<void> {
    await this.#syncing
    await this.#sync(false, true)
    // This very sync found Redis lost its keys (the windows to send again go now, not at the next
    // tick) or keys hot (the heartbeat announcing them goes now).
    if (this.#resendDue || this.fleet.hot.pending) await this.#sync(false, true)
  }

  /**
   * Stops the timer and sends what is pending (one attempt, when the client is connected), without
   * waiting for a sync in flight: running totals sent twice count once.
   */
  async close(beforeLast: () => Promise<void>): Promise<void> {
    this.#closed = true
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
    await beforeLast()
    // A client with no connection would only queue the call or wait for it to fail.
    if (this.client.connected()) await this.#sync(true, true)
  }

  readonly #tick = (): void => {
    const local = this.clock.local()
    // The first tick has no gap before it: the timer started with the first decision.
    const late = this.#lastTick === Number.NEGATIVE_INFINITY ? 0 : local - this.#lastTick - this.interval
    this.#lastTick = local
    this.#lag = Math.max(Math.min(late, MAX_LAG_MS), this.#lag * 0.9, 0)
    // A stepped wall clock: the offset to Redis is measured again by this very sync's heartbeat.
    if (this.clock.checkStep()) this.#measureNow = true
    if (this.#closed || this.#syncing !== undefined) return
    if (local < this.#nextAttempt && !(this.#failedDisconnected && this.client.connected())) return
    void this.#sync(false, false)
  }

  /**
   * One sync: what changed and what is watched, in one call per slot (Cluster) or per 1000
   * sub-windows; `all` sends held changes too (flush, close). It lasts while its calls are being
   * answered, however many: the timer sends no other on top of it (see `InFlight`).
   */
  #sync(final: boolean, all: boolean): Promise<void> {
    const started = this.clock.local()
    const now = this.clock.at(started)
    const groups = this.#collect(now, all)
    let keys = 0
    for (const group of groups) keys += group.length
    const monotonic = (): number => this.clock.clocks.monotonic()
    const flight: InFlight = { answeredAt: monotonic(), stalled: false }
    const answered = (): void => {
      flight.answeredAt = monotonic()
      flight.stalled = false
    }
    const sending = this.#sendAll(groups, now, answered)
    const calls: Promise<unknown>[] = groups.length === 0 ? [] : [sending.done]
    // After a failure every attempt carries a heartbeat: it tells when Redis is back.
    if (!final && (this.fleet.due(started) || this.#failures > 0 || this.#measureNow)) {
      this.#measureNow = false
      calls.push(this.#beat(started).then(answered))
    }
    if (calls.length === 0) return Promise.resolve()
    this.#inFlight = flight
    let reported = false
    const report = (error: unknown): void => {
      if (reported) return
      reported = true
      if (this.#inFlight === flight) this.#inFlight = undefined
      if (error !== undefined) sending.abandon()
      this.#settled(started, keys, error)
    }
    const quietFor = (ms: number, then: () => void) => watchQuiet(ms, () => flight.answeredAt, monotonic, then)
    const stopStalled = quietFor(Math.max(3 * this.interval, 1000), () => {
      flight.stalled = true
    })
    // A reply that comes after the timeout still lands (totals are idempotent); it just is not waited for.
    const timeout = Math.max(5 * this.interval, SYNC_TIMEOUT_MS)
    let stopTimeout = (): void => {}
    const silent = new Promise<never>((_, reject) => {
      stopTimeout = quietFor(timeout, () => reject(new Error(`Redis answered no call of a sync for ${timeout} ms`)))
    })
    const tracked: Promise<void> = Promise.race([Promise.all(calls), silent])
      .then(() => report(undefined), report)
      .finally(() => {
        stopStalled()
        stopTimeout()
        if (this.#syncing === tracked) this.#syncing = undefined
      })
    this.#syncing = tracked
    return tracked
  }

  /**
   * Sends the groups MAX_KEYS_IN_FLIGHT sub-windows at a time (one call at least), each next one as
   * one answers, calling `answered` at each reply. Once abandoned (the sync failed) it sends no more:
   * what it had not sent waits for the next sync.
   */
  #sendAll(groups: readonly Sent[][], now: number, answered: () => void): { done: Promise<void>; abandon(): void } {
    let next = 0
    let carried = 0
    let out = 0
    let abandoned = false
    const done = new Promise<void>((resolve, reject) => {
      const pump = (): void => {
        while (!abandoned && next < groups.length) {
          const group = groups[next] as Sent[]
          if (out > 0 && carried + group.length > MAX_KEYS_IN_FLIGHT) return
          next++
          carried += group.length
          out++
          this.#send(group, now).then(() => {
            carried -= group.length
            out--
            answered()
            if (next === groups.length && out === 0) resolve()
            else pump()
          }, reject)
        }
      }
      pump()
    })
    const abandon = (): void => {
      if (abandoned) return
      abandoned = true
      for (const group of groups.slice(next)) for (const { counters } of group) this.#retouch(counters)
      next = groups.length
    }
    return { done, abandon }
  }

  #settled(started: number, keys: number, error: unknown): void {
    const finished = this.clock.local()
    if (error === undefined) {
      this.#failures = 0
      this.#nextAttempt = 0
      this.#outage = false
    } else {
      if (!this.#outage) this.#holdOthers(this.clock.at(finished))
      this.#failedDisconnected = !this.client.connected()
      this.#failures++
      this.#nextAttempt = finished + Math.min(this.interval * 2 ** this.#failures, MAX_BACKOFF_MS)
    }
    if (this.observe === undefined) return
    const event: SyncEvent = { type: 'sync', store: 'synced', durationMs: finished - started, keys }
    this.observe(error === undefined ? event : { ...event, error })
  }

  /** A heartbeat; when Redis lost its keys (its epoch changed), every live window is news again. */
  async #beat(local: number): Promise<void> {
    if (await this.fleet.beat(local, this.clock)) this.#resendAll(this.clock.at(local))
  }

  /**
   * Redis lost its keys: the next sync sends every live window this node holds, and the others'
   * counts known here stay counted until Redis has them back (O(keys), once).
   */
  #resendAll(now: number): void {
    this.#resendDue = true
    this.entries.visitAll((entry) => {
      for (const counters of entry.counters) {
        for (const window of counters.windows) {
          if (!counters.live(window, now)) continue
          window.holdOthers()
          window.forgetSent()
        }
        this.touch(counters, counters.usedAt)
      }
    })
  }

  /**
   * Redis became unreachable, and may come back empty: until a reply shows it holds the others'
   * counts again, every live window keeps the part of them known now (O(keys), once an outage).
   */
  #holdOthers(now: number): void {
    this.#outage = true
    this.entries.visitAll((entry) => {
      for (const counters of entry.counters) {
        for (const window of counters.windows) if (counters.live(window, now)) window.holdOthers()
      }
    })
  }

  /** The sub-windows of what changed and what is watched, grouped by slot; and a slice of memory swept. */
  #collect(now: number, all: boolean): Sent[][] {
    const groups = new Map<number, Sent[]>()
    const cluster = this.client.cluster
    const settle = 2 * this.interval + this.#lag
    const add = (counters: PolicyCounters): void => {
      counters.prune(now)
      for (const window of counters.windows) {
        if (!counters.wanted(window, now, settle)) continue
        const slot = cluster ? slotOf(tagOf(window.redisKey)) : 0
        let group = groups.get(slot)
        if (group === undefined) {
          group = []
          groups.set(slot, group)
        }
        group.push({
          counters,
          window,
          keep: counters.keepFor(window, now),
          admitted: window.admitted,
          refunded: window.refunded,
          exact: window.exact,
          denied: window.deniedHere,
        })
      }
    }
    const changed = this.#changed
    const since = this.#changedSince
    this.#resendDue = false
    // Held news goes all together once any of it is due (or anything else is sent): a call then
    // carries many keys, rather than a call every interval for the one or two whose hold ended.
    // Counters forgotten since they changed have nothing to send: they hold nothing back.
    const holding =
      !all && changed.every((counters, i) => counters.stale || this.#holds(counters, since[i] as number, now))
    if (!holding) {
      this.#changed = []
      this.#changedSince = []
      for (const counters of changed) {
        // Forgotten since (evicted or swept): nothing of it is kept to send.
        if (counters.stale) continue
        counters.pending = false
        add(counters)
      }
    }
    if (this.#watched.size > 0) {
      const sent = new Set<number>()
      for (const counters of changed) if (!counters.stale) sent.add(counters.row)
      for (const [row, counters] of this.#watched) {
        if (counters.stale || now - counters.usedAt > WATCH_MS) this.#watched.delete(row)
        else if (!sent.has(row)) add(counters)
      }
    }
    this.entries.sweepSome(SWEPT_PER_SYNC, (entry) => {
      let kept = false
      for (const counters of entry.counters) {
        counters.prune(now)
        if (counters.kept) kept = true
      }
      return kept
    })
    const parts: Sent[][] = []
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_KEYS_PER_CALL) parts.push(group.slice(i, i + MAX_KEYS_PER_CALL))
    }
    return parts
  }

  /** One call; on failure what it carried waits for the next sync again. */
  async #send(all: Sent[], now: number): Promise<void> {
    // A big sync sends its calls a few at a time: a key may be forgotten before its call goes.
    const group = all.filter(({ window }) => !window.stale)
    if (group.length === 0) return
    const { keys, args } = syncCall(
      this.nodeId,
      group.map((sent) => ({ ...sent, redisKey: sent.window.redisKey, incarnation: sent.counters.incarnation })),
    )
    const asked = this.clock.local()
    let reply: number[]
    try {
      reply = (await run(this.client, SYNC, keys, args)) as number[]
    } catch (error) {
      for (const { counters } of group) this.#retouch(counters)
      throw error
    }
    const { serverTime, windows } = readSync(reply)
    this.clock.measure(asked, this.clock.local(), serverTime)
    // Redis lost its keys: hold what is known of the others before this reply's counts replace it.
    const lost = group.some(
      ({ window, counters }, i) =>
        windows[i]?.created === true &&
        !window.stale &&
        counters.live(window, now) &&
        window.sentAdmitted + window.sentExact > 0,
    )
    if (lost) this.#resendAll(now)
    for (const [i, sent] of group.entries()) {
      const { window, counters } = sent
      // Dropped while the call was out (its row may be another key's now): nothing here to record.
      if (window.stale) continue
      const heard = windows[i] as HeardWindow
      window.acknowledge(sent.admitted, sent.refunded, sent.exact, sent.denied)
      window.heard(heard.global, sent.admitted - sent.refunded + heard.exact, heard.denied, now, this.interval)
      counters.heard = true
      if (window.start !== counters.currentStart(now)) continue
      if (this.#near(counters, window)) this.#watched.set(counters.row, counters)
      // Hot: the other nodes decide their first request on it exactly (see `HotKeys`).
      if (counters.pressing(now, WATCH_FROM * this.exactAbove)) {
        const { span, depth } = counters.geometry
        this.fleet.hot.announce(counters.id, counters.key, now, window.start + span * depth)
      }
    }
    // A past sub-window Redis now has in full goes at once, not when the key is next used or swept
    // (what `collect` would drop before reading it): SyncedStore busy-keys rows of `pnpm bench:memory`.
    for (const { window, counters } of group) if (!window.stale && !counters.live(window, now)) counters.prune(now)
  }

  /**
   * Whether a changed key's news may wait for a later sync: a little of it, not for long, on a key
   * that stays far from its limit even if every node went on at this node's rate for the hold.
   */
  #holds(counters: PolicyCounters, since: number, now: number): boolean {
    const { span } = counters.geometry
    const live = this.fleet.liveNodes
    const hold = Math.min(HOLD_MS * live, span / 10)
    if (span < HOLD_SPAN_MS || now - since >= hold) return false
    if (counters.unsent(now) >= HOLD_UNITS) return false
    const current = counters.find(counters.currentStart(now))
    const estimate = current?.estimate ?? 0
    const projected = estimate + counters.unseen(now, live + 1, hold, this.#lag)
    return projected < WATCH_FROM * this.exactAbove * counters.limit
  }

  /** Near its limit: the limit of the last decision on the key here (`PolicyCounters.limit`; a plan change moves it). */
  #near(counters: PolicyCounters, window: SubWindow): boolean {
    return window.deniedAnywhere || window.estimate >= WATCH_FROM * this.exactAbove * counters.limit
  }
}

function tagOf(redisKey: string): string {
  return redisKey.slice(redisKey.indexOf('{') + 1, redisKey.indexOf('}'))
}
