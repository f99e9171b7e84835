import { StoreTimeoutError } from '../diagnostics/errors.js'

interface Pending {
  /** When it times out, on `performance.now()`'s clock (the one timers keep, faked or not). */
  readonly at: number
  /** Rejects the caller's promise; undefined once the answer or the timeout has settled it. */
  fail: ((error: StoreTimeoutError) => void) | undefined
}

/**
 * Times out one limiter's store calls with one timer, not one per call (setting and clearing a
 * timer per decision cost about 600 ns of a lone Redis decision's 18 µs of CPU). Every call waits
 * the same `timeout`, so calls expire in the order they were made: the timer waits only for the
 * oldest call still pending. Settled calls leave the queue's head as they settle; while nothing is
 * pending the timer may still be set, unreferenced where the runtime allows, so it keeps no
 * process alive that would otherwise exit.
 */
export class Deadlines {
  readonly #timeout: number
  #queue: Pending[] = []
  #head = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  #referenced = false

  constructor(timeout: number) {
    this.#timeout = timeout
  }

  /** The answer, or a StoreTimeoutError once `timeout` ms have passed. */
  settle<T>(answer: PromiseLike<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { at: performance.now() + this.#timeout, fail: reject }
      this.#queue.push(pending)
      if (this.#timer === undefined) this.#arm(this.#timeout)
      else if (!this.#referenced) this.#reference(true)
      answer.then(
        (value) => {
          this.#settled(pending)
          resolve(value)
        },
        (error: unknown) => {
          this.#settled(pending)
          reject(error)
        },
      )
    })
  }

  #settled(pending: Pending): void {
    pending.fail = undefined
    const queue = this.#queue
    while (this.#head < queue.length && (queue[this.#head] as Pending).fail === undefined) this.#head++
    if (this.#head === queue.length) {
      this.#queue = []
      this.#head = 0
      if (this.#referenced) this.#reference(false)
    } else if (this.#head > 1024 && this.#head * 2 > queue.length) {
      this.#queue = queue.slice(this.#head)
      this.#head = 0
    }
  }

  readonly #expire = (): void => {
    this.#timer = undefined
    const queue = this.#queue
    const now = performance.now()
    while (this.#head < queue.length) {
      const pending = queue[this.#head] as Pending
      if (pending.fail !== undefined) {
        if (pending.at > now) break
        const fail = pending.fail
        pending.fail = undefined
        fail(new StoreTimeoutError(this.#timeout))
      }
      this.#head++
    }
    if (this.#head === queue.length) {
      this.#queue = []
      this.#head = 0
      return
    }
    this.#arm(Math.max(1, Math.ceil((queue[this.#head] as Pending).at - now)))
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#expire, ms)
    this.#referenced = true
  }

  #reference(on: boolean): void {
    const timer = this.#timer as { ref?: () => void; unref?: () => void } | undefined
    if (on) timer?.ref?.()
    else timer?.unref?.()
    this.#referenced = on
  }
}
