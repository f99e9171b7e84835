import { describe, expect, it } from 'vitest'
import { ALGORITHMS } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'

/** Issue 13: blockFor, rate-limiter-flexible's blockDuration. */
describe('blockFor', () => {
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: once the policy denies, the key stays denied for blockFor, then counts afresh`, async () => {
      let now = 1_700_000_000_000
      const store = new MemoryStore({ now: () => now })
      const limiter = createLimiter({ limits: { limit: 3, window: '1s', algorithm, blockFor: '1m' }, store })
      for (let i = 0; i < 3; i++) expect((await limiter.consume('ann')).allowed).toBe(true)
      const denied = await limiter.consume('ann')
      expect(denied).toMatchObject({ allowed: false, remaining: 0, retryAfter: 60_000 })
      now += 5_000 // the window has long passed, the block has not
      const blocked = await limiter.consume('ann')
      expect(blocked).toMatchObject({ allowed: false, remaining: 0, retryAfter: 55_000 })
      expect((await limiter.peek('ann')).allowed).toBe(false)
      expect((await limiter.consume('bob')).allowed).toBe(true)
      now += 55_000
      expect((await limiter.consume('ann')).allowed).toBe(true)
    })
  }

  it('a denial by another policy does not block; reset lifts a block', async () => {
    let now = 1_700_000_000_000
    const store = new MemoryStore({ now: () => now })
    const limiter = createLimiter({
      limits: [
        { limit: 10, window: '1m', blockFor: '1h', name: 'guarded' },
        { limit: 1, window: '1s', name: 'burst', algorithm: 'fixed-window' },
      ],
      store,
    })
    await limiter.consume('k')
    expect((await limiter.consume('k')).binding.name).toBe('burst')
    now += 1000
    expect((await limiter.consume('k')).allowed).toBe(true)
    const blocking = createLimiter({ limits: { limit: 1, window: '1m', blockFor: '1h' }, store })
    await blocking.consume('x')
    expect((await blocking.consume('x')).retryAfter).toBe(3_600_000)
    await blocking.reset('x')
    expect((await blocking.consume('x')).allowed).toBe(true)
  })

  it('is validated, and a blocking policy keeps its own counts', async () => {
    expect(() => createLimiter({ limits: { limit: 1, window: '1m', blockFor: 'soon' } })).toThrow(
      /blockFor must be a duration/,
    )
    const store = new MemoryStore()
    const plain = createLimiter({ limits: '1/min', store })
    const guarded = createLimiter({ limits: { limit: 1, window: '1m', blockFor: '1h' }, store })
    await plain.consume('k')
    expect((await guarded.consume('k')).allowed).toBe(true)
  })
})

describe('limiter.penalty', () => {
  it('takes past the limit, drains as the algorithm drains, and is validated', async () => {
    let now = 1_700_000_000_000
    const limiter = createLimiter({
      limits: { limit: 10, window: '1s', algorithm: 'gcra' },
      store: new MemoryStore({ now: () => now }),
    })
    const after = await limiter.penalty('k', { cost: 15 })
    expect(after).toMatchObject({ allowed: false, remaining: 0, retryAfter: 600 })
    now += 600
    expect((await limiter.consume('k')).allowed).toBe(true)
    await expect(limiter.penalty('k', { cost: 0 })).rejects.toMatchObject({ field: 'cost' })
    await expect(limiter.penalty(5 as never)).rejects.toMatchObject({ field: 'key' })
    const bare = { consume: () => [], peek: () => [], reset: () => undefined }
    await expect(createLimiter({ limits: '1/s', store: bare }).penalty('k')).rejects.toMatchObject({ field: 'store' })
  })
})
