import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'
import type { Decision } from './decision.js'

/** Options of `limiter.acquire`. */
export interface AcquireOptions {
  /** Units this request takes. Default 1. */
  cost?: number
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal
  /**
   * The longest to wait (ms or a duration string). Once admission would come later, `acquire`
   * resolves with the denial instead. Default: no bound.
   */
  maxWait?: number | string
}

/** What `acquire` needs of its limiter. */
export interface Acquirable {
  consume(key: string, options: { cost?: number }): Promise<Decision>
  refund(key: string, options: { cost?: number }): Promise<void>
  readonly canRefund: boolean
}

interface Waiter {
  readonly cost: number | undefined
  /** Epoch ms after which this waiter would rather have the denial. */
  readonly deadline: number
  readonly signal: AbortSignal | undefined
  settled: boolean
  resolve(decision: Decision): void
  reject(reason: unknown): void
}

/** One key's waiters, first come first served, and how to cut the head's sleep short. */
interface Line {
  readonly waiters: Waiter[]
  wake: (() => void) | undefined
}

/**
 * `limiter.acquire`: waits until the key has room, then takes it. Waiters on one key form a
 * line in this process: only the first asks the store, sleeping the `retryAfter` the store gave
 * (never polling), so they are admitted in the order they came.
 */
export function acquirer(limiter: Acquirable): (key: string, options?: AcquireOptions) => Promise<Decision> {
  const lines = new Map<string, Line>()

  const settle = (waiter: Waiter, line: Line): boolean => {
    if (waiter.settled) return false
    waiter.settled = true
    const at = line.waiters.indexOf(waiter)
    if (at >= 0) line.waiters.splice(at, 1)
    if (at === 0) line.wake?.()
    return true
  }

  const serve = async (key: string, line: Line): Promise<void> => {
    while (line.waiters.length > 0) {
      const head = line.waiters[0] as Waiter
      let decision: Decision
      try {
        decision = await limiter.consume(key, { cost: head.cost })
      } catch (error) {
        if (settle(head, line)) head.reject(error)
        continue
      }
      if (head.settled) {
        // Aborted while the store decided: give back what it took, if the store can.
        if (decision.allowed && limiter.canRefund) await limiter.refund(key, { cost: head.cost }).catch(() => {})
        continue
      }
      if (decision.allowed) {
        settle(head, line)
        admit(key, head, decision)
        continue
      }
      // Everyone behind waits at least as long as the head: whoever's deadline comes first gives up now.
      const ready = Date.now() + decision.retryAfter
      for (const waiter of [...line.waiters]) {
        if (ready > waiter.deadline && settle(waiter, line)) waiter.resolve(decision)
      }
      if (line.waiters[0] !== head) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, decision.retryAfter))
        line.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      line.wake = undefined
    }
    lines.delete(key)
  }

  /** Admitted: at once, or once a shaping delay has passed (the units stay reserved meanwhile). */
  const admit = (key: string, waiter: Waiter, decision: Decision): void => {
    if (decision.delay <= 0) {
      waiter.resolve(decision)
      return
    }
    const timer = setTimeout(() => {
      waiter.signal?.removeEventListener('abort', abortDelay)
      waiter.resolve(decision)
    }, decision.delay)
    const abortDelay = () => {
      clearTimeout(timer)
      const refunded = limiter.canRefund ? limiter.refund(key, { cost: waiter.cost }) : Promise.resolve()
      refunded.catch(() => {}).then(() => waiter.reject(waiter.signal?.reason))
    }
    waiter.signal?.addEventListener('abort', abortDelay, { once: true })
  }

  return (key, options = {}) => {
    if (typeof key !== 'string') return Promise.reject(new ConfigError('key', key, 'must be a string'))
    if (options === null || typeof options !== 'object') {
      const n = typeof options === 'number' ? options : 'n'
      return Promise.reject(
        new ConfigError(
          'options',
          options,
          `must be an object such as { cost: 3 }: write acquire(key, { cost: ${n} })`,
        ),
      )
    }
    const { cost, signal, maxWait } = options
    let wait: number
    try {
      wait = maxWait === undefined ? Number.POSITIVE_INFINITY : toMilliseconds('maxWait', maxWait, { allowZero: true })
    } catch (error) {
      return Promise.reject(error)
    }
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      return Promise.reject(new ConfigError('signal', signal, 'must be an AbortSignal'))
    }
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise<Decision>((resolve, reject) => {
      let line = lines.get(key)
      const fresh = line === undefined
      line ??= { waiters: [], wake: undefined }
      const waiter: Waiter = {
        cost,
        deadline: Date.now() + wait,
        signal,
        settled: false,
        resolve: (decision) => {
          signal?.removeEventListener('abort', onAbort)
          resolve(decision)
        },
        reject: (reason) => {
          signal?.removeEventListener('abort', onAbort)
          reject(reason)
        },
      }
      const onAbort = () => {
        if (settle(waiter, line)) reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      line.waiters.push(waiter)
      if (fresh) {
        lines.set(key, line)
        void serve(key, line)
      }
    })
  }
}
