import { randomUUID } from 'node:crypto'
import { ConfigError } from '@sluice/core'
import { type RedisClient, run, type ScriptClient, script, scriptClient } from './client.js'
import { CLOSE_TIMEOUT_MS, type CloseReport } from './close-report.js'
import { HEARTBEAT_LUA } from './lua/heartbeat.js'
import { heartbeatKeys, NODE_TTL_MS } from './synced/heartbeat.js'
import { withTimeout } from './synced/timeout.js'

const HEARTBEAT = script(HEARTBEAT_LUA)
const BEAT_EVERY_MS = 1000

/** Options of `FleetSize`. */
export interface FleetSizeOptions {
  client: RedisClient
  /** The prefix of the stores it counts for. Default `'sluice:'`. */
  prefix?: string
}

/**
 * How many processes share one Redis. Each process beats once a second into the sorted set that
 * `SyncedStore`'s nodes beat into (`<prefix>{sluice-nodes}:live`: a fleet of either kind, or of
 * both, counts as one), and `processes` is the count Redis gave at the last beat it answered:
 * while Redis is away, the fleet as it stood when it went. For `FallbackShare`:
 * `new FallbackShare({ processes: () => fleet.processes })`. One Redis command a second per process.
 */
export class FleetSize {
  readonly #client: ScriptClient
  readonly #keys: string[]
  readonly #id = randomUUID()
  readonly #timer: ReturnType<typeof setInterval>
  #processes = 1
  /** Redis's epoch at the last beat: it changes when Redis loses its keys (restarted empty, flushed). */
  #epoch: string | undefined
  /** Until when (epoch ms) a count below the last is not believed: the set is filling again after a new epoch. */
  #recountUntil = 0
  #closing: Promise<CloseReport> | undefined

  constructor(options: FleetSizeOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { client: redis }')
    }
    const { client, prefix = 'sluice:' } = options
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new ConfigError('prefix', prefix, 'must be a string without { or }')
    }
    this.#client = scriptClient(client)
    this.#keys = heartbeatKeys(prefix)
    void this.#beat()
    this.#timer = setInterval(() => void this.#beat(), BEAT_EVERY_MS)
    // Counting the fleet must not keep a process alive.
    this.#timer.unref?.()
  }

  /** Processes alive at the last answered beat, this one included (1 before any). */
  get processes(): number {
    return this.#processes
  }

  /**
   * Stops beating and leaves the set, so the others count one fewer at once. Resolves within
   * 2 s whatever Redis does (a client without a connection is not asked: it could queue the call
   * for ever); the report says whether it left.
   */
  close(): Promise<CloseReport> {
    this.#closing ??= this.#leave()
    return this.#closing
  }

  async #leave(): Promise<CloseReport> {
    clearInterval(this.#timer)
    const left =
      this.#client.connected() &&
      (await withTimeout(run(this.#client, HEARTBEAT, this.#keys, [this.#id, NODE_TTL_MS, '1']), CLOSE_TIMEOUT_MS).then(
        () => true,
        () => false,
      ))
    return { complete: left, unsentKeys: 0, unreturnedLeases: 0, left }
  }

  async #beat(): Promise<void> {
    try {
      const [live, epoch] = (await run(this.#client, HEARTBEAT, this.#keys, [this.#id, NODE_TTL_MS, '0'])) as [
        number,
        string,
      ]
      if (this.#closing !== undefined) return
      const now = Date.now()
      // An emptied set holds only the processes that beat since: each live one beats within two
      // beats, and a share of 1 ÷ 1 meanwhile would let this process take the whole limit.
      if (this.#epoch !== undefined && String(epoch) !== this.#epoch) this.#recountUntil = now + 2 * BEAT_EVERY_MS
      this.#epoch = String(epoch)
      const counted = Math.max(1, Number(live))
      this.#processes = now < this.#recountUntil ? Math.max(this.#processes, counted) : counted
    } catch {
      // Redis away: keep the last count, which is what the fallback needs.
    }
  }
}
