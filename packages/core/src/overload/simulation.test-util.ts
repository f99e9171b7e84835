/**
 * A service of fixed capacity on a manual clock, for the overload tests and `pnpm bench:overload`:
 * everything happens in simulated time, so a run is exact, repeatable and independent of how
 * loaded the machine is.
 */

import { type Awaitable, isThenable } from '../stores/contract.js'
import { seededRandom } from '../testing/seeded-random.js'
import type { OverloadClock } from './adaptive-options.js'
import type { WorkOutcome } from './controller.js'

interface Timer {
  readonly at: number
  readonly seq: number
  readonly callback: () => void
  cancelled: boolean
}

/** Timers on simulated time: `runUntil` fires them in order, letting promise callbacks run between them. */
export class ManualClock implements OverloadClock {
  #time = 0
  #seq = 0
  readonly #heap: Timer[] = []
  readonly random: () => number

  constructor(seed = 1) {
    this.random = seededRandom(seed)
  }

  now(): number {
    return this.#time
  }

  setTimeout(callback: () => void, ms: number): Timer {
    const timer = { at: this.#time + Math.max(0, ms), seq: this.#seq++, callback, cancelled: false }
    this.#push(timer)
    return timer
  }

  clearTimeout(handle: unknown): void {
    if (handle) (handle as Timer).cancelled = true
  }

  /** Fires every timer due up to `time`, in order, then stands at `time`. */
  async runUntil(time: number): Promise<void> {
    for (;;) {
      const head = this.#heap[0]
      if (head === undefined || head.at > time) break
      this.#pop()
      if (head.cancelled) continue
      this.#time = head.at
      head.callback()
      // Let what the callback resolved run before the next timer (a queued request's admission).
      for (let i = 0; i < 4; i++) await null
    }
    this.#time = time
  }

  #push(timer: Timer): void {
    const heap = this.#heap
    heap.push(timer)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(timer, heap[parent] as Timer)) break
      heap[i] = heap[parent] as Timer
      i = parent
    }
    heap[i] = timer
  }

  #pop(): void {
    const heap = this.#heap
    const last = heap.pop() as Timer
    if (heap.length === 0) return
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      if (left >= heap.length) break
      const right = left + 1
      const child = right < heap.length && before(heap[right] as Timer, heap[left] as Timer) ? right : left
      if (!before(heap[child] as Timer, last)) break
      heap[i] = heap[child] as Timer
      i = child
    }
    heap[i] = last
  }
}

const before = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/**
 * Processor sharing: `capacity` jobs run at full speed, each taking its work in ms; with more in
 * flight they share the capacity, so each runs `capacity / inflight` as fast (latency rises
 * linearly with the load beyond capacity, throughput stays at `capacity / work`). Kept exact with
 * a virtual work clock, so each event costs O(log n) whatever the backlog.
 */
export class SimulatedService {
  #capacity: number
  #virtual = 0
  #lastReal: number
  #timer: unknown
  readonly #jobs: { finish: number; done: () => void }[] = []
  readonly #clock: ManualClock

  constructor(clock: ManualClock, capacity: number) {
    this.#clock = clock
    this.#capacity = capacity
    this.#lastReal = clock.now()
  }

  get inflight(): number {
    return this.#jobs.length
  }

  setCapacity(capacity: number): void {
    this.#advance()
    this.#capacity = capacity
    this.#schedule()
  }

  /** Starts a job of `workMs`; `done` is called when it completes. */
  start(workMs: number, done: () => void): void {
    this.#advance()
    this.#insert({ finish: this.#virtual + workMs, done })
    this.#schedule()
  }

  #rate(): number {
    return this.#jobs.length <= this.#capacity ? 1 : this.#capacity / this.#jobs.length
  }

  #advance(): void {
    const now = this.#clock.now()
    this.#virtual += (now - this.#lastReal) * this.#rate()
    this.#lastReal = now
  }

  #schedule(): void {
    this.#clock.clearTimeout(this.#timer)
    const next = this.#jobs[0]
    if (next === undefined) return
    const wait = Math.max(0, (next.finish - this.#virtual) / this.#rate())
    this.#timer = this.#clock.setTimeout(() => this.#complete(), wait)
  }

  #complete(): void {
    this.#advance()
    const done: (() => void)[] = []
    while (this.#jobs.length > 0 && (this.#jobs[0] as { finish: number }).finish <= this.#virtual + 1e-9) {
      done.push(this.#removeFirst().done)
    }
    this.#schedule()
    for (const callback of done) callback()
  }

  // A binary heap by finish time.
  #insert(job: { finish: number; done: () => void }): void {
    const heap = this.#jobs
    heap.push(job)
    let i = heap.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if ((heap[parent] as typeof job).finish <= job.finish) break
      heap[i] = heap[parent] as typeof job
      i = parent
    }
    heap[i] = job
  }

  #removeFirst(): { finish: number; done: () => void } {
    const heap = this.#jobs
    const first = heap[0] as { finish: number; done: () => void }
    const last = heap.pop() as typeof first
    if (heap.length > 0) {
      let i = 0
      for (;;) {
        const left = 2 * i + 1
        if (left >= heap.length) break
        const right = left + 1
        const child =
          right < heap.length && (heap[right] as typeof first).finish < (heap[left] as typeof first).finish
            ? right
            : left
        if ((heap[child] as typeof first).finish >= last.finish) break
        heap[i] = heap[child] as typeof first
        i = child
      }
      heap[i] = last
    }
    return first
  }
}

/** What admits work in a simulation: the adaptive limiter, a fixed limit, or nothing. */
export type Gate = (className: string) => Awaitable<{ release(outcome: WorkOutcome): void } | undefined>

/** One request's fate. */
export interface RequestRecord {
  readonly at: number
  readonly class: string
  /** `ok`: answered within the timeout; `late`: admitted, answered after the client gave up; `refused`. */
  readonly result: 'ok' | 'late' | 'refused'
  /** Arrival to answer (refused: arrival to refusal; never answered: arrival to the end of the run), ms. */
  readonly latencyMs: number
}

export interface LoadOptions {
  readonly clock: ManualClock
  readonly service: SimulatedService
  readonly gate: Gate
  /** Requests per second at time t (ms). */
  readonly rate: (time: number) => number
  readonly durationMs: number
  /** Base work of one request, ms: each takes it times a uniform factor in [0.75, 1.25). */
  readonly workMs: number
  /** The client's timeout, ms. */
  readonly timeoutMs: number
  /** The share of requests in the `critical` class (the rest are `default`). Default 0. */
  readonly criticalShare?: number
  readonly random: () => number
  /** Called every `sampleEveryMs` of simulated time (for plots and limit checks). */
  readonly onSample?: (time: number) => void
  readonly sampleEveryMs?: number
}

/** Poisson arrivals at `rate(t)` through `gate` into `service`, until `durationMs`. */
export async function runLoad(options: LoadOptions): Promise<RequestRecord[]> {
  const { clock, service, gate, random, workMs, timeoutMs } = options
  const records: RequestRecord[] = []
  // Admitted and not yet answered, by arrival time: what is left at the end is counted as late.
  const pending = new Map<number, { at: number; class: string }>()
  let ids = 0
  const start = clock.now()
  const arrive = (): void => {
    const at = clock.now()
    const cls = random() < (options.criticalShare ?? 0) ? 'critical' : 'default'
    const work = workMs * (0.75 + 0.5 * random())
    const serve = (slot: { release(outcome: WorkOutcome): void } | undefined): void => {
      if (slot === undefined) {
        records.push({ at, class: cls, result: 'refused', latencyMs: clock.now() - at })
        return
      }
      const id = ids++
      pending.set(id, { at, class: cls })
      service.start(work, () => {
        pending.delete(id)
        const latencyMs = clock.now() - at
        const late = latencyMs > timeoutMs
        records.push({ at, class: cls, result: late ? 'late' : 'ok', latencyMs })
        slot.release(late ? 'dropped' : 'success')
      })
    }
    const admitted = gate(cls)
    if (isThenable(admitted)) admitted.then(serve)
    else serve(admitted)
  }
  const scheduleNext = (): void => {
    const rate = options.rate(clock.now() - start)
    const gap = rate > 0 ? -Math.log(1 - random()) * (1000 / rate) : 10
    clock.setTimeout(() => {
      if (clock.now() - start >= options.durationMs) return
      if (rate > 0) arrive()
      scheduleNext()
    }, gap)
  }
  scheduleNext()
  if (options.onSample) {
    const every = options.sampleEveryMs ?? 100
    const sample = (): void => {
      options.onSample?.(clock.now() - start)
      if (clock.now() - start < options.durationMs) clock.setTimeout(sample, every)
    }
    clock.setTimeout(sample, every)
  }
  // Past the end, let the work in flight finish (the client's timeout bounds what it counts).
  await clock.runUntil(start + options.durationMs + timeoutMs * 4)
  for (const { at, class: cls } of pending.values()) {
    records.push({ at, class: cls, result: 'late', latencyMs: clock.now() - at })
  }
  return records
}
