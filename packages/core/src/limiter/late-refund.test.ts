import { describe, expect, it } from 'vitest'
import { refund, type SlidingWindowState, step } from '../algorithms/index.js'
import type { Adapter } from '../http/common-options.js'
import { createRateLimitHandler } from '../http/rate-limit.js'
import { parsePolicy } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

/** Issue 13, defect 1: a refund must never give back into a window later than its admission. */
describe('a late refund gives back only into the window of its admission', () => {
  const start = 1_000_000 // aligned to 50 ms
  const fixed = { limit: 2, window: 50, algorithm: 'fixed-window' } as const

  it('limiter: a refund admitted in the previous fixed window leaves the new window alone', async () => {
    let now = start
    const limiter = createLimiter({ limits: fixed, store: new MemoryStore({ now: () => now }) })
    await limiter.consume('k')
    const admittedAt = limiter.clock()
    now = start + 75
    await limiter.consume('k')
    await limiter.refund('k', { admittedAt })
    expect((await limiter.peek('k')).remaining).toBe(1)
    // A refund of the request admitted in this window still gives back.
    await limiter.refund('k', { admittedAt: start + 75 })
    expect((await limiter.peek('k')).remaining).toBe(2)
  })

  it('HTTP: skipSuccessfulRequests on a slow request that crosses the boundary keeps the new window’s failure', async () => {
    let now = start
    let status = 200
    type Args = [request: { id: string }]
    const adapter: Adapter<Args> = {
      name: '@sluice/test',
      addressSource: '-',
      address: () => '1.2.3.4',
      status: () => status,
    }
    const handler = createRateLimitHandler<Args, unknown>(
      { limits: fixed, store: new MemoryStore({ now: () => now }), skipSuccessfulRequests: true },
      adapter,
    )
    const slow = await handler.plan({ id: 'slow' })
    now = start + 75
    const failed = await handler.plan({ id: 'failed' })
    if (slow.kind !== 'continue' || failed.kind !== 'continue') throw new Error('expected both admitted')
    status = 500
    failed.settle?.(true)
    status = 200
    slow.settle?.(true)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect((await handler.limiter?.peek('1.2.3.4'))?.remaining).toBe(1)
  })

  it('sliding-window takes only from the sub-window of the admission, nothing once it slid out', () => {
    const policy = parsePolicy({ limit: 10, window: 1000, precision: 2 })
    let state = step(undefined, start, policy, 3).state
    state = step(state, start + 600, policy, 2).state
    expect(refund(state, start + 700, policy, 5, start)).toEqual({ start: start + 500, counts: [0, 0, 2] })
    expect(refund(state, start + 700, policy, 5, start + 600)).toEqual({ start: start + 500, counts: [0, 3, 0] })
    expect(refund(state, start + 700, policy, 5)).toEqual({ start: start + 500, counts: [0, 0, 0] })
    // At start + 1500 the admission's sub-window [start, start + 500) has slid out.
    expect(refund(state, start + 1500, policy, 5, start)).toBe(state)
  })

  it('sliding-log takes only from the entry of the admission instant', () => {
    const policy = parsePolicy({ limit: 10, window: 1000, algorithm: 'sliding-log' })
    let state = step(undefined, start, policy, 3).state
    state = step(state, start + 600, policy, 2).state
    expect(refund(state, start + 700, policy, 5, start)).toEqual({ times: [start + 600], costs: [2] })
    expect(refund(state, start + 700, policy, 1, start + 600)).toEqual({ times: [start, start + 600], costs: [3, 1] })
    // admittedAt is read just after the admission: a ms later still means the entry before it.
    expect(refund(state, start + 700, policy, 1, start + 1)).toEqual({ times: [start, start + 600], costs: [2, 2] })
    expect(refund(state, start + 700, policy, 1, start - 1)).toBe(state)
    expect(refund(state, start + 1000, policy, 3, start)).toBe(state)
  })

  it('sliding-window: an admittedAt read just past the sub-window boundary still finds the admission', () => {
    const policy = parsePolicy({ limit: 5, window: 1000, algorithm: 'sliding-window', precision: 10 })
    // Admitted at 99 ms into the window (sub-window 0), the clock read a ms later (sub-window 1).
    const state = step(undefined, start + 99, policy, 1).state as SlidingWindowState
    expect(refund(state, start + 150, policy, 1, start + 100)).toEqual({ ...state, counts: state.counts.map(() => 0) })
  })

  it('rejects an admittedAt that is not a time', async () => {
    const limiter = createLimiter({ limits: fixed })
    await expect(limiter.refund('k', { admittedAt: 'then' as never })).rejects.toMatchObject({ field: 'admittedAt' })
  })
})
