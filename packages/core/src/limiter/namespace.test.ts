import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Adapter } from '../http/common-options.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

type Args = [request: { ip: string }]
const adapter: Adapter<Args> = { name: '@sluice/test', addressSource: 'ip', address: (r) => r.ip, status: () => 200 }

/** Issue 13: namespaces keep limiters with the same policy on one store apart. */
describe('namespace', () => {
  afterEach(() => vi.restoreAllMocks())

  it('limiters with the same policy on one store share counts without, and are apart with, a namespace', async () => {
    const store = new MemoryStore()
    const login = createLimiter({ limits: '5/min', store, namespace: 'login' })
    const reset = createLimiter({ limits: '5/min', store, namespace: 'reset' })
    const plain = createLimiter({ limits: '5/min', store })
    for (let i = 0; i < 5; i++) await login.consume('ann')
    expect((await login.consume('ann')).allowed).toBe(false)
    expect((await reset.peek('ann')).remaining).toBe(5)
    expect((await plain.peek('ann')).remaining).toBe(5)
    // Keys are stored as '<namespace>:<key>'; a namespace holds no ':', so two namespaces never meet.
    const nested = createLimiter({ limits: '5/min', store, namespace: 'log' })
    expect((await nested.peek('in:ann')).remaining).toBe(5)
    const decision = await login.peek('ann')
    expect(decision.key).toBe('ann')
    await login.reset('ann')
    expect((await login.peek('ann')).remaining).toBe(5)
  })

  it('refund gives back within its namespace', async () => {
    const store = new MemoryStore()
    const a = createLimiter({ limits: '5/min', store, namespace: 'a' })
    const b = createLimiter({ limits: '5/min', store, namespace: 'b' })
    await a.consume('k')
    await b.consume('k')
    await a.refund('k')
    expect((await a.peek('k')).remaining).toBe(5)
    expect((await b.peek('k')).remaining).toBe(4)
  })

  it('is checked', () => {
    for (const namespace of ['', 'a:b', 'a b', 5]) {
      expect(() => createLimiter({ limits: '1/s', namespace: namespace as string })).toThrow(/^namespace must be/)
    }
  })

  it('validate warns once when two rate limits share a store and a policy without a namespace', async () => {
    // The warning is said once per process: its modules afresh, whatever ran before in this worker.
    vi.resetModules()
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const { MemoryStore } = await import('../stores/memory-store.js')
    const { createLimiter } = await import('./limiter.js')
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const store = new MemoryStore()
    const shared = createLimiter({ limits: '10/min', store })
    // One limiter on two routes, namespaced limiters, validate: false, other stores: no warning.
    createRateLimitHandler({ limiter: shared }, adapter)
    createRateLimitHandler({ limiter: shared }, adapter)
    createRateLimitHandler({ limits: '10/min', store, namespace: 'route' }, adapter)
    createRateLimitHandler({ limits: '10/min', store, validate: false }, adapter)
    createRateLimitHandler({ limits: '10/min' }, adapter)
    createRateLimitHandler({ limits: '10/min' }, adapter)
    expect(warn).not.toHaveBeenCalled()
    createRateLimitHandler({ limits: ['10/min', '2/s'], store }, adapter)
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]?.[0]).toMatch(
      /policy 10-per-1m on the same store without a namespace.*namespace: 'login'/,
    )
    createRateLimitHandler({ limits: '10/min', store }, adapter)
    expect(warn).toHaveBeenCalledTimes(1)
  })
})
