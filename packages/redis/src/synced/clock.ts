/** How long the offset to Redis time from a fast sync is kept before a slower one may replace it. */
const OFFSET_KEPT_MS = 10_000
/** The wall clock moving this much more or less than the monotonic one between two checks is a step (NTP slews far less). */
export const STEP_MS = 50

/** The two local clocks: the wall clock (epoch ms, may step) and a monotonic one (never steps). */
export interface LocalClocks {
  wall(): number
  monotonic(): number
}

const SYSTEM: LocalClocks = { wall: () => Date.now(), monotonic: () => performance.now() }

/**
 * Window time: the local clock moved by its offset to Redis `TIME`, so every node counts in the
 * same windows; or, in tests, an injected clock taken as it is.
 */
export class SyncClock {
  /** Server time minus local time, from the sync whose reply came back fastest lately. */
  #offset = 0
  /** How far `#offset` may be off (half that sync's round trip); infinite until measured. */
  #error = Number.POSITIVE_INFINITY
  #measuredAt = Number.NEGATIVE_INFINITY
  /** Both clocks at the last `checkStep`. */
  #lastWall: number | undefined
  #lastMonotonic = 0

  constructor(
    readonly injected: (() => number) | undefined,
    readonly clocks: LocalClocks = SYSTEM,
  ) {}

  /** The local clock in epoch ms (the injected one in tests). */
  local(): number {
    return this.injected === undefined ? this.clocks.wall() : this.injected()
  }

  /**
   * Whether the wall clock stepped since the last check (it moved more than STEP_MS away from the
   * monotonic clock). Redis's clock did not: the offset moves back by the step at once, so window
   * time goes on as before, and its error is forgotten, so the next reply measures it again.
   */
  checkStep(): boolean {
    if (this.injected !== undefined) return false
    const wall = this.clocks.wall()
    const monotonic = this.clocks.monotonic()
    const last = this.#lastWall
    this.#lastWall = wall
    const step = last === undefined ? 0 : wall - last - (monotonic - this.#lastMonotonic)
    this.#lastMonotonic = monotonic
    if (Math.abs(step) <= STEP_MS) return false
    this.#offset -= step
    this.#error = Number.POSITIVE_INFINITY
    return true
  }

  /** Window time now. */
  time(): number {
    return this.at(this.local())
  }

  /** Window time at local time `local`. */
  at(local: number): number {
    return this.injected === undefined ? Math.floor(local + this.#offset) : local
  }

  /** The local time at window time `time`: what the local clock read then. */
  toLocal(time: number): number {
    return this.injected === undefined ? Math.round(time - this.#offset) : time
  }

  /**
   * Keeps the offset from the sync with the shortest round trip (a busy event loop that reads a
   * reply late skews the midpoint), and a fresh one once it is 10 s old, as clocks drift; at once
   * when the two cannot both be right (each within its error): Redis's clock stepped (NTP, a
   * failover to a replica whose clock differs), and window time follows it now, not 10 s later
   * (meanwhile every exact script would run past its deadline, see `deadline`).
   */
  measure(asked: number, answered: number, server: number): void {
    const error = (answered - asked) / 2
    const offset = server - (asked + answered) / 2
    const agrees = Math.abs(offset - this.#offset) <= error + this.#error
    if (agrees && error > this.#error && answered - this.#measuredAt < OFFSET_KEPT_MS) return
    this.#offset = offset
    this.#error = error
    this.#measuredAt = answered
  }

  /**
   * The Redis time after which an exact script must not count its decision, since this node will
   * have answered it as denied after `timeout` ms: plus how far the offset may be off, so a script
   * that runs in time is never refused. 0 (none) on an injected clock or before a sync measured it.
   */
  deadline(now: number, timeout: number): number {
    if (this.injected !== undefined || this.#error === Number.POSITIVE_INFINITY) return 0
    return Math.ceil(now + timeout + this.#error)
  }
}
