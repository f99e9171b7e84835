import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { unhandledRejections } from '../../../../test/support/unhandled.js'
import { ConfigError } from '../diagnostics/errors.js'
import type { Store } from '../store.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

// Fake timers move Date.now and setTimeout together: the store's clock is Date.now, and
// acquire sleeps with setTimeout, so every wait below is exact and takes no real time.
beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2026, 10, 26, 12) })
})
afterEach(() => {
  vi.useRealTimers()
})

/** Starts of every admitted acquire, in ms since the test began, in the order they resolved. */
function recorder() {
  const start = Date.now()
  const starts: number[] = []
  const order: string[] = []
  return {
    starts,
    order,
    record: (name: string) => () => {
      starts.push(Date.now() - start)
      order.push(name)
    },
  }
}

/** The most starts within any span of `window` ms. */
function busiestWindow(starts: readonly number[], window: number): number {
  let most = 0
  for (const [i, from] of starts.entries()) {
    most = Math.max(most, starts.slice(i).filter((t) => t < from + window).length)
  }
  return most
}

describe('limiter.acquire', () => {
  it('resolves at once when the key has room, and after retryAfter when it has not', async () => {
    const limiter = createLimiter({
      limits: [{ limit: 2, window: '1s', algorithm: 'gcra', burst: 1 }],
      store: new MemoryStore(),
    })
    const { starts, record } = recorder()
    const first = limiter.acquire('k').then(record('a'))
    const second = limiter.acquire('k').then(record('b'))
    await vi.advanceTimersByTimeAsync(0)
    expect(starts).toEqual([0])
    await vi.advanceTimersByTimeAsync(499)
    expect(starts).toEqual([0])
    await vi.advanceTimersByTimeAsync(1)
    await Promise.all([first, second])
    expect(starts).toEqual([0, 500])
  })

  it('admits waiters on one key first come, first served, whatever their cost', async () => {
    const limiter = createLimiter({ limits: [{ limit: 4, window: '1s', algorithm: 'sliding-log' }] })
    const { order, record } = recorder()
    await limiter.consume('k', { cost: 4 })
    const waiting = [
      limiter.acquire('k', { cost: 3 }).then(record('big')),
      limiter.acquire('k').then(record('small-1')),
      limiter.acquire('k').then(record('small-2')),
    ]
    await vi.advanceTimersByTimeAsync(5000)
    await Promise.all(waiting)
    // small-1 would fit beside big's 3 in the second window; it still waits its turn.
    expect(order).toEqual(['big', 'small-1', 'small-2'])
  })

  it('sleeps the retryAfter the store gave: one consume per wait, no polling', async () => {
    const decisions: boolean[] = []
    const limiter = createLimiter({
      limits: [{ limit: 1, window: '10s', algorithm: 'fixed-window' }],
      observe: (event) => {
        if (event.type === 'decision') decisions.push(event.decision.allowed)
      },
    })
    const waiting = [limiter.acquire('k'), limiter.acquire('k'), limiter.acquire('k')]
    await vi.advanceTimersByTimeAsync(30_000)
    await Promise.all(waiting)
    // Each waiter after the first: one denial while it is first in line, then its admission.
    expect(decisions).toEqual([true, false, true, false, true])
  })

  it('resolves with the denial once admission would come after maxWait', async () => {
    const limiter = createLimiter({ limits: [{ limit: 1, window: '1s', algorithm: 'sliding-log' }] })
    await limiter.consume('k')
    const decision = await limiter.acquire('k', { maxWait: '500ms' })
    expect(decision).toMatchObject({ allowed: false, retryAfter: 1000 })
    const patient = limiter.acquire('k', { maxWait: '1s' })
    await vi.advanceTimersByTimeAsync(1000)
    expect(await patient).toMatchObject({ allowed: true })
  })

  it('a waiter behind others gets the denial once its turn would come after its maxWait', async () => {
    const limiter = createLimiter({ limits: [{ limit: 1, window: '1s', algorithm: 'sliding-log' }] })
    await limiter.consume('k')
    const head = limiter.acquire('k')
    const outlasted = limiter.acquire('k', { maxWait: 500 }) // the head alone waits 1000
    let later: unknown
    void limiter.acquire('k', { maxWait: 1500 }).then((d) => {
      later = d
    })
    expect(await outlasted).toMatchObject({ allowed: false, retryAfter: 1000 })
    await vi.advanceTimersByTimeAsync(0)
    expect(later).toBeUndefined() // its turn might come at 1000: it waits
    await vi.advanceTimersByTimeAsync(1000)
    expect(await head).toMatchObject({ allowed: true })
    await vi.advanceTimersByTimeAsync(0)
    expect(later).toMatchObject({ allowed: false, retryAfter: 1000 }) // after the head: at 2000
  })

  it('rejects with the signal reason when aborted, and the next waiter goes on at once', async () => {
    const limiter = createLimiter({ limits: [{ limit: 1, window: '1s', algorithm: 'sliding-log' }] })
    await limiter.consume('k')
    const controller = new AbortController()
    const aborted = limiter.acquire('k', { signal: controller.signal })
    const { starts, record } = recorder()
    const next = limiter.acquire('k').then(record('next'))
    await vi.advanceTimersByTimeAsync(200)
    const reason = new Error('shutting down')
    controller.abort(reason)
    await expect(aborted).rejects.toBe(reason)
    await vi.advanceTimersByTimeAsync(800)
    await next
    expect(starts).toEqual([1000])
    await expect(limiter.acquire('k', { signal: AbortSignal.abort('already') })).rejects.toBe('already')
  })

  it('waits out a shaping delay before resolving, and gives the units back when aborted meanwhile', async () => {
    const limiter = createLimiter({ limits: [{ limit: 1, window: '1s', algorithm: 'gcra', maxDelay: '5s' }] })
    await limiter.consume('k')
    const { starts, record } = recorder()
    const shaped = limiter.acquire('k').then(record('shaped'))
    await vi.advanceTimersByTimeAsync(1000)
    await shaped
    expect(starts).toEqual([1000])
    const controller = new AbortController()
    const aborted = limiter.acquire('k', { signal: controller.signal })
    await vi.advanceTimersByTimeAsync(100)
    controller.abort(new Error('gone'))
    await expect(aborted).rejects.toThrow('gone')
    // The aborted acquire had reserved 2000–3000; given back, the next request is due at 2000.
    expect((await limiter.consume('k')).delay).toBe(900)
  })

  it('an acquire aborted while an asynchronous store decides gives back what the store took', async () => {
    const memory = new MemoryStore()
    const store: Store = {
      consume: (key, set, cost) => Promise.resolve(memory.consume(key, set, cost)),
      peek: (key, set) => memory.peek(key, set),
      reset: (key, set) => memory.reset(key, set),
      refund: (key, set, cost) => memory.refund(key, set, cost),
    }
    const limiter = createLimiter({ limits: [{ limit: 3, window: '1m', algorithm: 'sliding-log' }], store })
    const controller = new AbortController()
    const aborted = limiter.acquire('k', { cost: 2, signal: controller.signal })
    controller.abort(new Error('gone')) // the store has been asked, and has not answered yet
    await expect(aborted).rejects.toThrow('gone')
    await vi.advanceTimersByTimeAsync(0)
    expect((await limiter.peek('k')).remaining).toBe(3)
  })

  it('rejects bad input with a ConfigError naming the field', async () => {
    const limiter = createLimiter({ limits: ['2/s'] })
    await expect(limiter.acquire('k', { maxWait: '5 parsecs' })).rejects.toThrow(ConfigError)
    await expect(limiter.acquire('k', { cost: 3 })).rejects.toThrow(/cost/)
    await expect(limiter.acquire(42 as unknown as string)).rejects.toThrow(/key/)
    await expect(limiter.acquire('k', { signal: {} as AbortSignal })).rejects.toThrow(/signal/)
  })

  it("'5/s' on a sliding log never starts more than 5 jobs in any second", async () => {
    const { seen, watch, unwatch } = unhandledRejections()
    watch()
    const limiter = createLimiter({ limits: [{ limit: 5, window: '1s', algorithm: 'sliding-log' }] })
    const { starts, record } = recorder()
    const jobs = Array.from({ length: 23 }, (_, i) => limiter.acquire('vendor').then(record(`job-${i}`)))
    await vi.advanceTimersByTimeAsync(10_000)
    await Promise.all(jobs)
    expect(starts).toHaveLength(23)
    expect(busiestWindow(starts, 1000)).toBe(5)
    expect(starts.at(-1)).toBe(4000) // 23 jobs at 5 a second: the last starts in the fifth second
    unwatch()
    expect(seen).toEqual([])
  })

  it("'5/s' as gcra with burst 1 paces one job every 200 ms, never more than 5 in any second", async () => {
    const limiter = createLimiter({ limits: [{ limit: 5, window: '1s', algorithm: 'gcra', burst: 1 }] })
    const { starts, record } = recorder()
    const jobs = Array.from({ length: 12 }, (_, i) => limiter.acquire('vendor').then(record(`job-${i}`)))
    await vi.advanceTimersByTimeAsync(10_000)
    await Promise.all(jobs)
    expect(starts).toEqual([0, 200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800, 2000, 2200])
    expect(busiestWindow(starts, 1000)).toBe(5)
  })
})
