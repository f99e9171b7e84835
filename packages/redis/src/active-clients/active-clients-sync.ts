import { type ActiveClients, ConfigError, type Observe, type ObserveEvent, type SyncEvent } from '@sluice/core'
import type { ActiveClientsSync } from '@sluice/core/adapter'
import { assertKnownOptions, containObserve, toMilliseconds } from '@sluice/core/internal'
import { type RedisClient, run, type ScriptClient, script, scriptClient } from '../client.js'
import { assertPrefix } from '../common-options.js'
import { ACTIVE_CLIENTS_SYNC_LUA } from '../lua/active-clients.js'

/** Every option `RedisActiveClientsSync` takes; any other name is a ConfigError with a hint. */
export const ACTIVE_CLIENTS_SYNC_OPTION_NAMES: readonly string[] = [
  'client',
  'prefix',
  'name',
  'interval',
  'timeout',
  'observe',
]

/** Options of `RedisActiveClientsSync`: `client`, `name`, `interval`, `prefix`, …. */
export interface RedisActiveClientsSyncOptions {
  /** An ioredis or iovalkey `Redis` or `Cluster`, or a node-redis v5 client or cluster (see RedisStore). */
  client: RedisClient
  /** Put before every key. Default `'sluice:active:'`. Must not contain `{` or `}`. */
  prefix?: string
  /** The limiter's name: every node of one limiter uses the same; it is the keys' hash tag. Default `'default'`. */
  name?: string
  /** How often each node syncs: ms or a duration string. Default '1s'. */
  interval?: number | string
  /** A sync not answered within this is counted as failed (the next one sends everything). Default 5 × interval. */
  timeout?: number | string
  /** Called with a `sync` event after each sync (the same function a limiter's `observe` takes); its exceptions are contained. */
  observe?: Observe
}

/** What a node has sent and received, for tests and benchmarks. */
export interface SyncStats {
  /** Script calls answered. */
  syncs: number
  /** Script calls that failed or timed out. */
  errors: number
  /** Payload bytes sent (new bit positions or whole slots). */
  bytesSent: number
  /** New bit positions sent (as gaps; whole slots not counted). */
  positionsSent: number
  /** Slot bytes received from Redis. */
  bytesReceived: number
  /** Timer ticks skipped because the previous sync was still running. */
  skipped: number
}

const SYNC = script(ACTIVE_CLIENTS_SYNC_LUA)
const NOTHING = Buffer.alloc(0)

/**
 * Shares an `ActiveClients` between processes through Redis: once per `interval` each node makes
 * one script call that ORs what it set since its last sync (new bit positions, or whole slots
 * when those are smaller) into the shared slots and returns the slots others changed, which the
 * node ORs into its own. OR cannot conflict, so there is no lock and no retry; calls per node do
 * not depend on traffic. Keys expire one window after their last write and share one hash tag.
 *
 * Redis down or slow: requests never wait (the sync runs on its own timer), the node goes on
 * with what it knows, and the first sync that succeeds sends its whole window and reads everyone
 * else's. The same happens when Redis comes back empty (its epoch key tells).
 *
 * The timer starts in `attach` (admissionControl calls it) and is unref'd; `close()` stops it.
 */
export class RedisActiveClientsSync implements ActiveClientsSync {
  readonly prefix: string
  readonly name: string
  readonly interval: number
  readonly timeout: number
  readonly stats: SyncStats = { syncs: 0, errors: 0, bytesSent: 0, positionsSent: 0, bytesReceived: 0, skipped: 0 }
  readonly #client: ScriptClient
  readonly #observe: ((event: ObserveEvent) => void) | undefined
  #clients: ActiveClients | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  #running: Promise<void> | undefined
  /** The epoch of Redis's keys this node last saw; undefined before the first sync and after a failure. */
  #epoch: string | undefined
  /** Per slot, the version this node last read. */
  readonly #seen = new Map<number, number>()
  #closed = false

  constructor(options: RedisActiveClientsSyncOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { client: new Redis() }')
    }
    assertKnownOptions(
      options as unknown as Record<string, unknown>,
      ACTIVE_CLIENTS_SYNC_OPTION_NAMES,
      'RedisActiveClientsSync',
    )
    const { client, prefix = 'sluice:active:', name = 'default', observe } = options
    const scripts = scriptClient(client)
    assertPrefix(prefix)
    if (typeof name !== 'string' || name === '' || /[{}]/.test(name)) {
      throw new ConfigError('name', name, 'must be a non-empty string without { or }')
    }
    this.interval = toMilliseconds('interval', options.interval ?? 1000)
    this.timeout = toMilliseconds('timeout', options.timeout ?? 5 * this.interval)
    this.#client = scripts
    this.prefix = prefix
    this.name = name
    this.#observe = containObserve(observe)
  }

  /** Starts syncing `clients` every interval. One ActiveClients per sync. */
  attach(clients: ActiveClients): void {
    if (this.#clients !== undefined && this.#clients !== clients) {
      throw new ConfigError('clients', clients, 'cannot join a sync already attached to other ActiveClients')
    }
    if (this.#closed) throw new ConfigError('sync', this, 'is closed')
    this.#clients = clients
    clients.trackChanges()
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        if (this.#running) this.stats.skipped++
        else void this.syncNow()
      }, this.interval)
      this.#timer.unref?.()
    }
  }

  /** One sync now (or the one running); resolves when done, never rejects. */
  syncNow(): Promise<void> {
    const clients = this.#clients
    if (clients === undefined) return Promise.resolve()
    this.#running ??= this.#sync(clients).finally(() => {
      this.#running = undefined
    })
    return this.#running
  }

  /**
   * Stops the timer and sends what is left (best effort): resolves within `timeout` in all, the
   * sync in flight and the last one together, whatever Redis does.
   */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.timeout)
    })
    const last = (async () => {
      await this.#running
      await this.syncNow()
    })()
    await Promise.race([last, deadline]).finally(() => clearTimeout(timer))
  }

  async #sync(clients: ActiveClients): Promise<void> {
    const started = performance.now()
    const head = `${this.prefix}{${this.name}}:${clients.bits}x${clients.hashes}:`
    const current = clients.currentSlot()
    // Before the first sync and after a failure: read every live slot, whatever its version.
    const catchUp = this.#epoch === undefined
    const keys = [`${head}epoch`, `${head}scratch`]
    const args: (string | Buffer)[] = [String(clients.window + clients.slotLength)]
    const slots: number[] = []
    let bytes = 0
    let positions = 0
    for (const slot of clients.liveSlots()) {
      const changes = clients.takeChanges(slot)
      // The current slot and the one before (others may still add to it until they rotate).
      if (changes === undefined && !catchUp && slot < current - 1) continue
      let mode = '-'
      let payload: Buffer = NOTHING
      if (changes !== undefined) {
        if ('bits' in changes) {
          mode = 'd'
          payload = Buffer.from(changes.bits.buffer, changes.bits.byteOffset, changes.bits.byteLength)
        } else {
          mode = 'g'
          payload = gapsPayload(changes.positions)
          positions += changes.positions.length
        }
      }
      bytes += payload.length
      slots.push(slot)
      keys.push(`${head}s:${slot}`, `${head}v:${slot}`)
      args.push(mode, payload, String(catchUp ? -1 : (this.#seen.get(slot) ?? -1)))
    }
    let error: unknown
    try {
      const reply = await this.#call(keys, args)
      this.#apply(clients, slots, reply)
      this.stats.syncs++
      this.stats.bytesSent += bytes
      this.stats.positionsSent += positions
    } catch (caught) {
      error = caught
      this.stats.errors++
      // What was taken for this call may not have landed: send the whole window next time.
      this.#epoch = undefined
      clients.markAllChanged()
    }
    if (this.#observe) {
      const event: SyncEvent = {
        type: 'sync',
        store: 'active-clients',
        durationMs: performance.now() - started,
        keys: keys.length,
        bytes,
        ...(error !== undefined && { error }),
      }
      this.#observe(event)
    }
  }

  #apply(clients: ActiveClients, slots: number[], reply: unknown[]): void {
    const epoch = String(reply[0])
    const epochChanged = this.#epoch !== undefined && this.#epoch !== epoch
    this.#epoch = epoch
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number
      this.#seen.set(slot, Number(reply[1 + 2 * i]))
      const bits = reply[2 + 2 * i]
      if (bits instanceof Uint8Array && bits.length > 0) {
        this.stats.bytesReceived += bits.length
        clients.mergeSlot(slot, bits.length > clients.bits / 8 ? bits.subarray(0, clients.bits / 8) : bits)
      }
    }
    const oldest = clients.currentSlot() - clients.slots
    for (const slot of this.#seen.keys()) if (slot <= oldest) this.#seen.delete(slot)
    // Redis lost the keys (restart, expiry): give it the whole window back and read it all next time.
    if (epochChanged) {
      clients.markAllChanged()
      this.#epoch = undefined
    }
  }

  /** EVALSHA, EVAL on NOSCRIPT (a restarted server, a new Cluster shard), bounded by `timeout`. */
  #call(keys: string[], args: (string | Buffer)[]): Promise<unknown[]> {
    const call = run(this.#client, SYNC, keys, args, true) as Promise<unknown[]>
    let timer: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`sync not answered within ${this.timeout} ms`)), this.timeout)
      timer.unref?.()
    })
    // A call abandoned by the timeout may still fail later: that failure is already accounted for.
    call.catch(() => {})
    return Promise.race([call, timedOut]).finally(() => clearTimeout(timer))
  }
}

/**
 * New bit positions, ascending, each as its distance from the one before less 1 (the first: from
 * -1) in LEB128 (7 bits a byte, the high bit set on every byte but a number's last), as the script
 * reads them. A sync's positions are spread over the filter, so a gap takes about
 * log2(bits / positions) bits: 2 bytes where a u32 took 4 (figures in bench/README.md, issue 42).
 */
export function gapsPayload(positions: Uint32Array): Buffer {
  const sorted = positions.slice().sort()
  const payload = Buffer.allocUnsafe(sorted.length * 5)
  let length = 0
  let previous = -1
  for (let i = 0; i < sorted.length; i++) {
    const position = sorted[i] as number
    let gap = position - previous - 1
    previous = position
    while (gap >= 128) {
      payload[length++] = (gap % 128) | 128
      gap = Math.floor(gap / 128)
    }
    payload[length++] = gap
  }
  return payload.subarray(0, length)
}
