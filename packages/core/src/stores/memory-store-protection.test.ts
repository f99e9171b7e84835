import { describe, expect, it } from 'vitest'
import { createLimiter, type Limiter } from '../limiter/limiter.js'
import { ALGORITHMS, type PolicyInput } from '../policies/policy.js'
import { MemoryStore } from './memory-store.js'

/**
 * A limited key is never evicted before it is back to full quota: else a flood of new keys would
 * free it. Each way a key becomes limited is pinned here, on a small store flooded by a limiter
 * whose keys are never limited.
 */
// Odd: with an even room, the sweep's two steps per insert always pass the oldest key, and the
// eviction after them never reaches it (see the control tests below).
const MAX_KEYS = 21
const FLOOD = 200

function setup() {
  const clock = { now: 1_000_000 }
  const store = new MemoryStore({ maxKeys: MAX_KEYS, now: () => clock.now })
  const limiter = (limits: PolicyInput | readonly PolicyInput[]) => createLimiter({ limits, store })
  const flooder = limiter('1000/min')
  const flood = async () => {
    for (let i = 0; i < FLOOD; i++) expect((await flooder.consume(`flood-${i}`)).allowed).toBe(true)
    // The store did evict: the flood's keys outnumber its room many times over.
    expect(store.size).toBe(MAX_KEYS)
  }
  return { clock, store, limiter, flood }
}

/** Consumes until the key is denied; the number of admissions. */
async function exhaust(limiter: Limiter, key: string): Promise<number> {
  let admitted = 0
  while ((await limiter.consume(key)).allowed) admitted++
  return admitted
}

describe('MemoryStore: a limited key survives a flood of new keys', () => {
  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}, one policy: limited by its last admission`, async () => {
      const { limiter, flood } = setup()
      const one = limiter({ limit: 2, window: '1m', algorithm })
      await one.consume('k')
      expect((await one.consume('k')).remaining).toBe(0)
      await flood()
      expect((await one.consume('k')).allowed).toBe(false)
    })

    it(`${algorithm}, one policy: limited by a denial that leaves quota for a smaller cost`, async () => {
      const { limiter, flood } = setup()
      const one = limiter({ limit: 5, window: '1m', algorithm })
      expect((await one.consume('k', { cost: 3 })).remaining).toBe(2)
      expect((await one.consume('k', { cost: 3 })).allowed).toBe(false)
      await flood()
      expect((await one.consume('k', { cost: 3 })).allowed).toBe(false)
    })

    for (const denying of [0, 1]) {
      it(`${algorithm}, two policies: limited by a denial of policy ${denying} that leaves quota for a smaller cost`, async () => {
        const { limiter, flood } = setup()
        const burst = { limit: 5, window: '1m', algorithm, name: 'burst' }
        const slow = { limit: 10, window: '1h', algorithm, name: 'slow' }
        const two = limiter(denying === 0 ? [burst, slow] : [slow, burst])
        expect((await two.consume('k', { cost: 3 })).remaining).toBe(2)
        expect((await two.consume('k', { cost: 3 })).allowed).toBe(false)
        await flood()
        expect((await two.consume('k', { cost: 3 })).allowed).toBe(false)
      })
    }

    it(`${algorithm}, two policies: limited by the first`, async () => {
      const { limiter, flood } = setup()
      const two = limiter([
        { limit: 2, window: '1m', algorithm },
        { limit: 10, window: '1h', algorithm, name: 'slow' },
      ])
      await two.consume('k')
      expect((await two.consume('k')).policies.map((p) => p.remaining)).toEqual([0, 8])
      await flood()
      expect((await two.consume('k')).allowed).toBe(false)
    })

    it(`${algorithm}, two policies: limited by the second`, async () => {
      const { limiter, flood } = setup()
      const two = limiter([
        { limit: 10, window: '1h', algorithm },
        { limit: 2, window: '1m', algorithm, name: 'burst' },
      ])
      await two.consume('k')
      expect((await two.consume('k')).policies.map((p) => p.remaining)).toEqual([8, 0])
      await flood()
      expect((await two.consume('k')).allowed).toBe(false)
    })

    it(`${algorithm}, three policies: limited by a denial that leaves quota for a smaller cost`, async () => {
      const { limiter, flood } = setup()
      const three = limiter([
        { limit: 20, window: '1h', algorithm },
        { limit: 10, window: '10m', algorithm, name: 'middle' },
        { limit: 5, window: '1m', algorithm, name: 'burst' },
      ])
      expect((await three.consume('k', { cost: 3 })).remaining).toBe(2)
      expect((await three.consume('k', { cost: 3 })).allowed).toBe(false)
      await flood()
      expect((await three.consume('k', { cost: 3 })).allowed).toBe(false)
    })

    it(`${algorithm}, three policies: limited by the third`, async () => {
      const { limiter, flood } = setup()
      const three = limiter([
        { limit: 10, window: '1h', algorithm },
        { limit: 5, window: '10m', algorithm, name: 'middle' },
        { limit: 2, window: '1m', algorithm, name: 'burst' },
      ])
      await three.consume('k')
      expect((await three.consume('k')).policies.map((p) => p.remaining)).toEqual([8, 3, 0])
      await flood()
      expect((await three.consume('k')).allowed).toBe(false)
    })

    it(`${algorithm} with a sliding log beside it: limited by the log`, async () => {
      const { limiter, flood } = setup()
      const mixed = limiter([
        { limit: 10, window: '1h', algorithm },
        { limit: 2, window: '1m', algorithm: 'sliding-log', name: 'log' },
      ])
      await mixed.consume('k')
      expect((await mixed.consume('k')).policies.map((p) => p.remaining)).toEqual([8, 0])
      await flood()
      expect((await mixed.consume('k')).allowed).toBe(false)
    })

    it(`${algorithm} with blockFor: blocked by a denial`, async () => {
      const { limiter, flood } = setup()
      const blocking = limiter({ limit: 2, window: '1m', algorithm, blockFor: '1h' })
      expect(await exhaust(blocking, 'k')).toBe(2)
      await flood()
      const decision = await blocking.consume('k')
      expect(decision.allowed).toBe(false)
      expect(decision.retryAfter).toBeGreaterThan(60_000)
    })

    it(`${algorithm}: limited by a penalty`, async () => {
      const { limiter, flood } = setup()
      const penalized = limiter({ limit: 5, window: '1m', algorithm })
      expect((await penalized.penalty('k', { cost: 5 })).allowed).toBe(false)
      await flood()
      expect((await penalized.consume('k')).allowed).toBe(false)
    })
  }

  it('blocked by block()', async () => {
    const { limiter, flood } = setup()
    const blocking = limiter({ limit: 100, window: '1m', blockFor: '1h' })
    await blocking.block('k', '30m')
    await flood()
    expect((await blocking.consume('k')).allowed).toBe(false)
  })

  for (const bare of [true, false]) {
    it(`stays protected when another limiter sharing the key resets its own policies (${
      bare ? "the store's first policy" : 'a later policy'
    } limited)`, async () => {
      const { limiter, flood } = setup()
      const other = limiter('10/min')
      if (bare) await other.consume('k')
      const limited = limiter('2/min')
      if (!bare) await other.consume('k')
      expect(await exhaust(limited, 'k')).toBe(2)
      await other.reset('k')
      await flood()
      expect((await limited.consume('k')).allowed).toBe(false)
      // The reset did reset the other limiter's policy.
      expect((await other.consume('k')).remaining).toBe(9)
    })
  }

  // Controls: the flood reaches the limited key's place, so each test above fails if it is unprotected.
  it('the flood evicts a key that is not limited', async () => {
    const { limiter, flood } = setup()
    const unlimited = limiter('10/min')
    await unlimited.consume('k')
    await flood()
    expect((await unlimited.consume('k')).remaining).toBe(9)
  })

  it("a key is evictable again once the set that limited it is reset, another set's state remaining", async () => {
    const { limiter, flood } = setup()
    const other = limiter('10/min')
    await other.consume('k')
    const limited = limiter('2/min')
    expect(await exhaust(limited, 'k')).toBe(2)
    await limited.reset('k')
    await flood()
    expect((await other.consume('k')).remaining).toBe(9)
  })
})
