import { ConfigError } from '../diagnostics/errors.js'
import { containObserve, type ObserveEvent, type OverloadEvent, type OverloadRefusal } from '../diagnostics/observe.js'
import type { Awaitable } from '../stores/contract.js'
import {
  type AdaptiveLimiterOptions,
  type OverloadAlgorithm,
  type ParsedOptions,
  parseAdaptiveOptions,
} from './adaptive-options.js'
import type { LatencyWindow } from './algorithm.js'

/** How admitted work ended, for what the limit learns from it. */
export type WorkOutcome =
  /** It finished: its latency is a sample. */
  | 'success'
  /** It was dropped for lack of capacity (timed out, abandoned by a client that gave up): a sign of overload. */
  | 'dropped'
  /** It tells nothing about capacity (failed at once, cancelled for its own reasons): no sample. */
  | 'ignore'

/** Admitted work: call `release` once it is done (later calls do nothing). */
export interface Slot {
  readonly admitted: true
  /** The class it was admitted in. */
  readonly class: string
  /** Milliseconds it waited in the queue. */
  readonly waitedMs: number
  release(outcome?: WorkOutcome): void
}

/** Refused work: the limit was reached and the queue could not keep it. */
export interface Refused {
  readonly admitted: false
  readonly class: string
  readonly reason: OverloadRefusal
  readonly waitedMs: number
  /** The limit when it was refused. */
  readonly limit: number
}

/** Per class: work in flight, waiting, and refused since the limiter was made. */
export interface OverloadClassStats {
  readonly inflight: number
  readonly queued: number
  readonly refused: number
  /** Slots of the current limit kept for this class alone. */
  readonly reserved: number
}

/** A snapshot of the controller. */
export interface OverloadStats {
  readonly limit: number
  readonly inflight: number
  readonly queued: number
  /** The no-load latency the last probe measured, ms. */
  readonly baselineMs: number | undefined
  readonly probing: boolean
  readonly classes: Readonly<Record<string, OverloadClassStats>>
}

/** Thrown by `run` for refused work. */
export class OverloadedError extends Error {
  override readonly name = 'OverloadedError'
  constructor(readonly refusal: Refused) {
    super(`refused (${refusal.reason}): the ${refusal.class} class is over the limit of ${refusal.limit}`)
  }
}

/** A concurrency limit learned from the latency of the work it admits: see `createAdaptiveLimiter`. */
export interface AdaptiveLimiter {
  readonly name: string
  readonly algorithm: OverloadAlgorithm
  /** The limit now (whole; `min` while probing). */
  readonly limit: number
  readonly inflight: number
  readonly queued: number
  stats(): OverloadStats
  /**
   * A slot for work of `className` (default: the last class), at once when there is room, else
   * after waiting in the queue; a `Refused` when there is no room and no wait. Never rejects: an
   * aborted `signal` refuses with reason `'aborted'`. A class not listed counts as the last.
   */
  acquire(className?: string, signal?: AbortSignal): Awaitable<Slot | Refused>
  /** Runs `work` in a slot, releasing it after; throws `OverloadedError` when refused. A rejection of `work` is `'ignore'`d unless `dropped` says otherwise. */
  run<T>(
    work: () => Promise<T> | T,
    options?: { class?: string; signal?: AbortSignal; dropped?: (error: unknown) => boolean },
  ): Promise<T>
}

interface ClassState {
  readonly name: string
  readonly reserve: number
  readonly rank: number
  inflight: number
  refused: number
  readonly waiters: Waiter[]
}

interface Waiter {
  readonly cls: ClassState
  readonly since: number
  timer: unknown
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
  resolve(result: Slot | Refused): void
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/**
 * A concurrency limit that learns: admitted work reports its latency when released; every
 * sample window the algorithm (Gradient2, Vegas or AIMD) moves the limit within `min`…`max`; a
 * probe re-measures the no-load latency now and then. Work over the limit waits in a short
 * queue, most critical class first, and is refused when the queue cannot keep it. Usable
 * without HTTP: `const slot = await limiter.acquire('batch'); … slot.release()`.
 */
export function createAdaptiveLimiter(options?: AdaptiveLimiterOptions): AdaptiveLimiter {
  return new Controller(parseAdaptiveOptions(options), containObserve(options?.observe))
}

class Controller implements AdaptiveLimiter {
  readonly name: string
  readonly algorithm: OverloadAlgorithm
  readonly #o: ParsedOptions
  readonly #emit: ((event: ObserveEvent) => void) | undefined
  readonly #classes: ClassState[]
  readonly #byName = new Map<string, ClassState>()
  #limit: number
  #inflight = 0
  #queued = 0
  // The current sample window.
  #windowStart: number
  #samples = 0
  #sumMs = 0
  #dropped = 0
  #maxInflight = 0
  // Probing the no-load latency.
  #baselineMs: number | undefined
  #nextProbeAt: number
  #probe: { readonly since: number; readonly limitBefore: number; readonly samples: number[] } | undefined

  constructor(options: ParsedOptions, emit: ((event: ObserveEvent) => void) | undefined) {
    this.#o = options
    this.#emit = emit
    this.name = options.name
    this.algorithm = options.algorithmName
    this.#limit = options.initial
    this.#classes = options.classes.map((c, rank) => ({ ...c, rank, inflight: 0, refused: 0, waiters: [] }))
    for (const c of this.#classes) this.#byName.set(c.name, c)
    const now = options.clock.now()
    this.#windowStart = now
    this.#nextProbeAt = Number.POSITIVE_INFINITY
    // The first probe measures the no-load latency at once, as Envoy's filter does at start.
    if (options.probe) this.#probe = { since: now, limitBefore: this.#limit, samples: [] }
  }

  get limit(): number {
    return this.#probe ? this.#o.min : Math.floor(this.#limit)
  }

  get inflight(): number {
    return this.#inflight
  }

  get queued(): number {
    return this.#queued
  }

  stats(): OverloadStats {
    const classes: Record<string, OverloadClassStats> = {}
    for (const c of this.#classes) {
      classes[c.name] = {
        inflight: c.inflight,
        queued: c.waiters.length,
        refused: c.refused,
        reserved: this.#reserved(c),
      }
    }
    return {
      limit: this.limit,
      inflight: this.#inflight,
      queued: this.#queued,
      baselineMs: this.#baselineMs,
      probing: this.#probe !== undefined,
      classes,
    }
  }

  acquire(className?: string, signal?: AbortSignal): Awaitable<Slot | Refused> {
    const cls = this.#classOf(className)
    if (signal?.aborted) return this.#refuse(cls, 'aborted', 0)
    if (!this.#waitingAtOrAbove(cls.rank) && this.#fits(cls)) return this.#admit(cls, 0)
    const { size, maxWaitMs } = this.#o.queue
    if (size === 0) return this.#refuse(cls, 'limit', 0)
    if (this.#queued >= size) {
      const victim = this.#leastCriticalWaiterBelow(cls.rank)
      if (victim === undefined) return this.#refuse(cls, 'queue-full', 0)
      this.#settleWaiter(victim, (waited) => this.#refuse(victim.cls, 'evicted', waited))
    }
    return new Promise<Slot | Refused>((resolve) => {
      const waiter: Waiter = { cls, since: this.#o.clock.now(), timer: undefined, signal, onAbort: undefined, resolve }
      waiter.timer = this.#o.clock.setTimeout(
        () => this.#settleWaiter(waiter, (waited) => this.#refuse(cls, 'timeout', waited)),
        maxWaitMs,
      )
      if (signal) {
        waiter.onAbort = () => this.#settleWaiter(waiter, (waited) => this.#refuse(cls, 'aborted', waited))
        signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      cls.waiters.push(waiter)
      this.#queued++
      this.#emitRequest(cls, 'queued', undefined, 0)
    })
  }

  async run<T>(
    work: () => Promise<T> | T,
    options: { class?: string; signal?: AbortSignal; dropped?: (error: unknown) => boolean } = {},
  ): Promise<T> {
    if (typeof work !== 'function') throw new ConfigError('work', work, 'must be a function that does the work')
    const result = await this.acquire(options.class, options.signal)
    if (!result.admitted) throw new OverloadedError(result)
    try {
      const value = await work()
      result.release('success')
      return value
    } catch (error) {
      result.release(options.dropped?.(error) ? 'dropped' : 'ignore')
      throw error
    }
  }

  #classOf(name: string | undefined): ClassState {
    return (name === undefined ? undefined : this.#byName.get(name)) ?? (this.#classes.at(-1) as ClassState)
  }

  #reserved(cls: ClassState): number {
    return Math.floor(cls.reserve * this.limit)
  }

  /** Room for one more of `cls`: its own reserve, or the room no other class has reserved and left unused. */
  #fits(cls: ClassState): boolean {
    const limit = this.limit
    if (this.#inflight >= limit) return false
    if (cls.inflight < this.#reserved(cls)) return true
    let unusedByOthers = 0
    for (const other of this.#classes) {
      if (other !== cls) unusedByOthers += Math.max(0, this.#reserved(other) - other.inflight)
    }
    return this.#inflight + 1 + unusedByOthers <= limit
  }

  #waitingAtOrAbove(rank: number): boolean {
    for (let i = 0; i <= rank; i++) if ((this.#classes[i] as ClassState).waiters.length > 0) return true
    return false
  }

  /** The newest waiter of the least critical class below `rank` that has any. */
  #leastCriticalWaiterBelow(rank: number): Waiter | undefined {
    for (let i = this.#classes.length - 1; i > rank; i--) {
      const waiters = (this.#classes[i] as ClassState).waiters
      if (waiters.length > 0) return waiters.at(-1)
    }
    return undefined
  }

  /** Takes the waiter out of the queue (once) and resolves it with what `outcome` makes. */
  #settleWaiter(waiter: Waiter, outcome: (waitedMs: number) => Slot | Refused): void {
    const at = waiter.cls.waiters.indexOf(waiter)
    if (at < 0) return
    waiter.cls.waiters.splice(at, 1)
    this.#queued--
    this.#o.clock.clearTimeout(waiter.timer)
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.resolve(outcome(this.#o.clock.now() - waiter.since))
  }

  #admit(cls: ClassState, waitedMs: number): Slot {
    this.#inflight++
    cls.inflight++
    if (this.#inflight > this.#maxInflight) this.#maxInflight = this.#inflight
    const since = this.#o.clock.now()
    const inflightAtStart = this.#inflight
    this.#emitRequest(cls, 'admitted', undefined, waitedMs)
    let released = false
    return {
      admitted: true,
      class: cls.name,
      waitedMs,
      release: (outcome = 'success') => {
        if (released) return
        released = true
        this.#inflight--
        cls.inflight--
        this.#emitRequest(cls, 'released', undefined, waitedMs)
        if (outcome !== 'ignore') this.#sample(since, inflightAtStart, outcome === 'dropped')
        this.#drain()
      },
    }
  }

  #refuse(cls: ClassState, reason: OverloadRefusal, waitedMs: number): Refused {
    cls.refused++
    this.#emitRequest(cls, 'refused', reason, waitedMs)
    return { admitted: false, class: cls.name, reason, waitedMs, limit: this.limit }
  }

  /** Admits waiters while they fit, most critical class first. */
  #drain(): void {
    for (const cls of this.#classes) {
      while (cls.waiters.length > 0 && this.#fits(cls)) {
        const waiter = cls.waiters[0] as Waiter
        this.#settleWaiter(waiter, (waited) => this.#admit(cls, waited))
      }
    }
  }

  #sample(since: number, inflightAtStart: number, dropped: boolean): void {
    const now = this.#o.clock.now()
    const ms = now - since
    const probe = this.#probe
    if (probe) {
      // Only work that ran at the probe's low concurrency measures the no-load latency.
      if (since >= probe.since && inflightAtStart <= this.#o.min && !dropped) probe.samples.push(ms)
      if (probe.samples.length >= (this.#o.probe?.samples ?? 0))
        this.#endProbe(now, probe.limitBefore, median(probe.samples))
      return
    }
    this.#samples++
    this.#sumMs += ms
    if (dropped) this.#dropped++
    if (now - this.#windowStart >= this.#o.windowMs && this.#samples >= this.#o.windowSamples) this.#update(now)
  }

  #update(now: number): void {
    const window: LatencyWindow = {
      meanMs: this.#sumMs / this.#samples,
      samples: this.#samples,
      dropped: this.#dropped,
      maxInflight: this.#maxInflight,
    }
    const previous = this.#limit
    const delay = this.#o.eventLoopDelay
    let cause: 'latency' | 'event-loop-delay' = 'latency'
    let next: number
    if (delay && delay.histogram.percentile(99) / 1e6 > delay.thresholdMs) {
      cause = 'event-loop-delay'
      next = previous * 0.9
    } else {
      next = this.#o.algorithm.update(previous, window)
    }
    delay?.histogram.reset()
    this.#limit = Math.min(this.#o.max, Math.max(this.#o.min, next))
    this.#resetWindow(now)
    this.#emitLimit(Math.floor(previous), cause, window.meanMs)
    if (now >= this.#nextProbeAt) {
      this.#probe = { since: now, limitBefore: this.#limit, samples: [] }
      this.#emitLimit(Math.floor(this.#limit), 'probe-start', window.meanMs)
    }
    this.#drain()
  }

  #endProbe(now: number, limitBefore: number, baselineMs: number): void {
    this.#probe = undefined
    this.#baselineMs = baselineMs
    this.#o.algorithm.rebase(baselineMs)
    this.#limit = limitBefore
    this.#resetWindow(now)
    this.#nextProbeAt = now + this.#jittered((this.#o.probe as { everyMs: number }).everyMs)
    this.#emitLimit(this.#o.min, 'probe-end', baselineMs)
  }

  #resetWindow(now: number): void {
    this.#windowStart = now
    this.#samples = 0
    this.#sumMs = 0
    this.#dropped = 0
    this.#maxInflight = this.#inflight
  }

  /** Up to 10 % shorter, so that a fleet started together does not probe together. */
  #jittered(ms: number): number {
    return ms * (1 - 0.1 * (this.#o.clock.random?.() ?? Math.random()))
  }

  #emitLimit(
    previous: number,
    cause: 'latency' | 'event-loop-delay' | 'probe-start' | 'probe-end',
    latencyMs: number,
  ): void {
    this.#emit?.({
      type: 'overload-limit',
      name: this.name,
      algorithm: this.algorithm,
      limit: this.limit,
      previous,
      cause,
      latencyMs,
      inflight: this.#inflight,
    })
  }

  #emitRequest(
    cls: ClassState,
    outcome: OverloadEvent['outcome'],
    reason: OverloadRefusal | undefined,
    waitedMs: number,
  ): void {
    this.#emit?.({
      type: 'overload',
      name: this.name,
      class: cls.name,
      outcome,
      ...(reason === undefined ? {} : { reason }),
      waitedMs,
      limit: this.limit,
      inflight: this.#inflight,
      queued: this.#queued,
      classInflight: cls.inflight,
      classQueued: cls.waiters.length,
    })
  }
}
