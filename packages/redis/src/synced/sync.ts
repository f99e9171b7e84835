import type { ObserveEvent, SyncEvent } from '@sluice/core'
import { run, type ScriptClient, script } from '../client.js'
import type { SyncClock } from './clock.js'
import type { PolicyCounters, SubWindow } from './counters.js'
import type { Entries } from './entries.js'
import { DISCOVERY_HEARTBEATS, type Fleet } from './fleet.js'
import { slotOf } from './slot.js'
import { SYNC_LUA } from './sync-lua.js'
import { withTimeout } from './timeout.js'

const SYNC = script(SYNC_LUA)
/** A script call blocks Redis while it runs: big flushes go in parts. */
const MAX_KEYS_PER_CALL = 1000
const MAX_BACKOFF_MS = 5000
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
 * The background loop: every `interval` one script call (per hash slot on a Cluster, per 1000
 * sub-windows) sends this node's running totals and brings back the sums over all nodes, with a
 * heartbeat when due; failures back off exponentially up to 5 s.
 */
export class SyncLoop {
  #lastSuccess: number
  #failures = 0
  #nextAttempt = 0
  #timer: ReturnType<typeof setInterval> | undefined
  #syncing: Promise<void> | undefined
  #closed = false

  constructor(
    readonly client: ScriptClient,
    readonly nodeId: string,
    readonly interval: number,
    readonly entries: Entries,
    readonly clock: SyncClock,
    readonly fleet: Fleet,
    readonly observe: ((event: ObserveEvent) => void) | undefined,
  ) {
    this.#lastSuccess = clock.local()
  }

  /** Whether the last syncs failed for long enough that each node enforces only its share. */
  degradedAt(local: number): boolean {
    return this.#failures > 0 || local - this.#lastSuccess > Math.max(3 * this.interval, 1000)
  }

  /**
   * How old the other nodes' counts may be when this node reads them: up to an interval on their
   * side, and on this side the time since the last sync landed (at least an interval). A busy
   * event loop that delays syncs widens it, and keys go exact sooner.
   */
  staleness(local: number): number {
    return this.interval + Math.max(this.interval, local - this.#lastSuccess)
  }

  /** The timer starts with the first decision, never at import or construction; it never keeps a process alive. */
  start(): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#lastSuccess = this.clock.local()
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
    await this.#sync(false)
  }

  /** Stops the timer and sends what is pending (one attempt). */
  async close(beforeLast: () => Promise<void>): Promise<void> {
    this.#closed = true
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
    await this.#syncing
    await beforeLast()
    await this.#sync(true)
  }

  readonly #tick = (): void => {
    if (this.#closed || this.#syncing !== undefined || this.clock.local() < this.#nextAttempt) return
    void this.#sync(false)
  }

  /** One sync: every dirty or still-estimated sub-window, in one call per slot (Cluster) or per 1000 keys. */
  #sync(final: boolean): Promise<void> {
    const started = this.clock.local()
    const groups = this.#collect(this.clock.at(started))
    let keys = 0
    for (const group of groups) keys += group.length
    const calls: Promise<unknown>[] = groups.map((group) => this.#send(group))
    if (!final && this.fleet.due(started)) calls.push(this.fleet.beat(started))
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
    const finished = this.clock.local()
    if (error === undefined) {
      this.#failures = 0
      this.#lastSuccess = finished
      this.#nextAttempt = 0
    } else {
      this.#failures++
      this.#nextAttempt = finished + Math.min(this.interval * 2 ** this.#failures, MAX_BACKOFF_MS)
    }
    if (this.observe === undefined) return
    const event: SyncEvent = { type: 'sync', store: 'synced', durationMs: finished - started, keys }
    this.observe(error === undefined ? event : { ...event, error })
  }

  #collect(now: number): Sent[][] {
    const groups = new Map<number, Sent[]>()
    const cluster = this.client.cluster
    this.entries.sweep((entry) => {
      let kept = false
      for (const counters of entry.counters) {
        counters.prune(now)
        for (const window of counters.windows) {
          kept = true
          if (!window.dirty && !counters.live(window, now)) continue
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
    const asked = this.clock.local()
    const reply = (await run(this.client, SYNC, keys, args)) as number[]
    this.clock.measure(asked, this.clock.local(), (reply[0] as number) * 1000 + Math.floor((reply[1] as number) / 1000))
    for (const [i, sent] of group.entries()) {
      const window = sent.window
      window.acknowledge(sent.admitted, sent.refunded, sent.denied)
      window.heard(
        reply[2 + 3 * i] as number,
        sent.admitted - sent.refunded + (reply[4 + 3 * i] as number),
        reply[3 + 3 * i] === 1,
      )
      sent.counters.heard = true
    }
  }
}

function tagOf(redisKey: string): string {
  return redisKey.slice(redisKey.indexOf('{') + 1, redisKey.indexOf('}'))
}
