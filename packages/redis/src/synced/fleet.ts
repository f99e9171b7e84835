import { run, type ScriptClient, script } from '../client.js'
import { HEARTBEAT_LUA, HOT_READ_LUA } from '../lua/heartbeat.js'
import type { SyncClock } from './clock.js'
import { heartbeatKeys, hotSetKeys, NODE_TTL_MS } from './heartbeat.js'
import { HotKeys } from './hot.js'
import { withTimeout } from './timeout.js'

const HEARTBEAT = script(HEARTBEAT_LUA)
const HOT_READ = script(HOT_READ_LUA)
const HEARTBEAT_EVERY_MS = 1000
/** Heartbeats with the first syncs, spread over the first interval, so nodes started together see each other within it. */
export const DISCOVERY_HEARTBEATS = 3

/** This node's place in the fleet: its heartbeats, how many nodes beat with it, and the keys they found hot. */
export class Fleet {
  /** Nodes seen alive at the last heartbeat (1 before any). */
  liveNodes = 1
  readonly hot = new HotKeys()
  #lastBeat = Number.NEGATIVE_INFINITY
  #beats = 0

  /** Redis's epoch at the last heartbeat; undefined before the first. */
  #epoch: string | undefined
  /** The read of the hot keys in flight (see `readHot`). */
  #reading: Promise<void> | undefined

  constructor(
    readonly client: ScriptClient,
    /** The key prefix: the set of live nodes and the epoch share its `{sluice-nodes}` hash tag. */
    readonly prefix: string,
    readonly nodeId: string,
  ) {}

  get #keys(): string[] {
    return heartbeatKeys(this.prefix)
  }

  /** A beat's keys: the heartbeat's, then the hot keys' sets. */
  get #beatKeys(): string[] {
    return [...heartbeatKeys(this.prefix), ...hotSetKeys(this.prefix)]
  }

  /**
   * The first syncs each carry a heartbeat while the fleet is being discovered, then one a second,
   * and the next sync after this node found a key hot: the others learn it within an interval
   * after their next heartbeat.
   */
  due(local: number): boolean {
    return this.#beats < DISCOVERY_HEARTBEATS || local - this.#lastBeat >= HEARTBEAT_EVERY_MS || this.hot.pending
  }

  /** One heartbeat; resolves true when Redis's epoch changed since the last (it lost its keys). */
  async beat(local: number, clock: SyncClock): Promise<boolean> {
    this.#lastBeat = local
    this.#beats++
    const asked = clock.local()
    const hotArgs = this.hot.takeArgs()
    let reply: unknown[]
    try {
      reply = (await run(this.client, HEARTBEAT, this.#beatKeys, [
        this.nodeId,
        NODE_TTL_MS,
        '0',
        ...hotArgs,
      ])) as unknown[]
    } catch (error) {
      this.hot.restore(hotArgs)
      throw error
    }
    const [live, epoch, seconds, micros, hot] = reply as [number, string, number, number, (string | number)[]]
    clock.measure(asked, clock.local(), seconds * 1000 + Math.floor(micros / 1000))
    this.hot.heard(hot, clock.time())
    this.hot.read(asked)
    this.liveNodes = Math.max(1, Number(live))
    const changed = this.#epoch !== undefined && this.#epoch !== String(epoch)
    this.#epoch = String(epoch)
    return changed
  }

  /**
   * Reads the hot keys announced since the last read (HOT_READ_LUA), one read in flight shared by
   * every decision waiting for it; never rejects, waits at most `ms`: a failed read leaves the hot
   * keys as they were.
   */
  readHot(clock: SyncClock, ms: number): Promise<void> {
    this.#reading ??= this.#readHot(clock, ms).finally(() => {
      this.#reading = undefined
    })
    return this.#reading
  }

  async #readHot(clock: SyncClock, ms: number): Promise<void> {
    const asked = clock.local()
    const [, announced] = hotSetKeys(this.prefix)
    try {
      const flat = (await withTimeout(run(this.client, HOT_READ, [announced], [this.hot.since]), ms)) as (
        | string
        | number
      )[]
      this.hot.heard(flat, clock.time())
    } catch {
      // Decided as before the read: the sync loop's own failures make the node degraded.
    }
    this.hot.read(asked)
  }

  /**
   * Leaves the set of live nodes (others stop counting it within NODE_TTL_MS anyway); never
   * rejects, waits at most `ms`; whether Redis took it.
   */
  async leave(ms: number): Promise<boolean> {
    if (!this.client.connected()) return false
    const call = run(this.client, HEARTBEAT, this.#keys, [this.nodeId, NODE_TTL_MS, '1'])
    return withTimeout(call, ms).then(
      () => true,
      () => false,
    )
  }
}
