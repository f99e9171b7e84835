import { describe, expect, it } from 'vitest'
import type { Outcome } from '../algorithms/index.js'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import type { ALGORITHMS, PolicySet } from '../policies/policy.js'
import type { Store } from './contract.js'
import { FallbackShare } from './fallback-share.js'
import { MemoryStore } from './memory-store.js'

const admittedOf = async (limiter: ReturnType<typeof createLimiter>, key: string, requests: number) => {
  let admitted = 0
  for (let i = 0; i < requests; i++) if ((await limiter.consume(key)).allowed) admitted++
  return admitted
}

describe('FallbackShare', () => {
  it.each([
    ['fixed-window', 12, 3],
    ['sliding-window', 12, 3],
    ['sliding-log', 12, 3],
    ['token-bucket', 12, 3],
    ['gcra', 12, 3],
  ] as const)('enforces ⌊limit ÷ processes⌋ of a %s limit of %d among 4 processes', async (algorithm, limit, share) => {
    const now = 1_800_000_000_000
    const store = new FallbackShare({ processes: 4, store: new MemoryStore({ now: () => now }) })
    const limiter = createLimiter({ limits: { limit, window: '1min', algorithm }, store })
    expect(await admittedOf(limiter, 'k', limit)).toBe(share)
  })

  it('follows a number of processes that changes, keeping the counts already taken', async () => {
    let processes = 2
    const store = new FallbackShare({ processes: () => processes })
    const limiter = createLimiter({ limits: { limit: 10, window: '1min', algorithm: 'fixed-window' }, store })
    expect(await admittedOf(limiter, 'k', 3)).toBe(3)
    processes = 5
    // 3 taken against a share of 2: nothing more.
    expect(await admittedOf(limiter, 'k', 3)).toBe(0)
    processes = 1
    expect(await admittedOf(limiter, 'k', 10)).toBe(7)
  })

  it("a plan change of a named policy gets the new plan's share, on the usage so far", async () => {
    const store = new FallbackShare({ processes: 2 })
    const free = createLimiter({ limits: { limit: 10, window: '1h', name: 'plan' }, store })
    const pro = createLimiter({ limits: { limit: 100, window: '1h', name: 'plan' }, store })
    expect(await admittedOf(free, 'k', 10)).toBe(5)
    // 5 used of pro's share of 50.
    expect(await admittedOf(pro, 'k', 100)).toBe(45)
    expect(await admittedOf(free, 'k', 1)).toBe(0)
  })

  it('admits at least one per process when the limit is below the number of processes', async () => {
    const limiter = createLimiter({ limits: '2/min', store: new FallbackShare({ processes: 8 }) })
    expect(await admittedOf(limiter, 'k', 3)).toBe(1)
  })

  it('refuses a number of processes that is not a whole number of at least 1', () => {
    for (const processes of [0, 1.5, -1, Number.NaN, '4']) {
      expect(() => new FallbackShare({ processes: processes as number })).toThrow(ConfigError)
    }
    expect(() => new FallbackShare({ processes: 0 })).toThrow(/processes must be a whole number/)
  })
})

/** A shared store standing for Redis: a MemoryStore behind an asynchronous answer that can fail, or be emptied. */
class Shared implements Store {
  failing = false
  memory: MemoryStore
  constructor(readonly now: () => number) {
    this.memory = new MemoryStore({ now })
  }
  empty(): void {
    this.memory = new MemoryStore({ now: this.now })
  }
  consume(key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    return this.failing ? Promise.reject(new Error('down')) : Promise.resolve(this.memory.consume(key, set, cost))
  }
  peek(key: string, set: PolicySet): Promise<readonly Outcome[]> {
    return Promise.resolve(this.memory.peek(key, set))
  }
  reset(key: string, set: PolicySet): Promise<void> {
    this.memory.reset(key, set)
    return Promise.resolve()
  }
}

describe('FallbackShare over a shared store that fails', () => {
  const WINDOW = 10_000
  const LIMIT = 200
  const START = 1_800_000_000_000 // a multiple of 10 s: a fixed window starts here

  const fleetOf = (algorithm: (typeof ALGORITHMS)[number], processes: number) => {
    let now = START
    const clock = () => now
    const shared = new Shared(clock)
    const limiters = Array.from({ length: processes }, () =>
      createLimiter({
        limits: { limit: LIMIT, window: WINDOW, algorithm },
        store: shared,
        onStoreError: new FallbackShare({ processes, now: clock }),
        breaker: false,
      }),
    )
    /** Each process asks `each` times, in turn (even traffic); admitted in all. */
    const offer = async (each: number) => {
      let admitted = 0
      for (let i = 0; i < each; i++) for (const limiter of limiters) admitted += await admittedOf(limiter, 'hot', 1)
      return admitted
    }
    return { shared, offer, at: (ms: number) => (now = START + ms) }
  }

  describe.each([1000, 9000])('the fault %i ms into a fixed window, 4 processes offered 3× the limit', (faultAt) => {
    // Before the fault each process was offered 150 × faultAt/10 s; 3× the limit over the window.
    const before = (150 * faultAt) / WINDOW

    it('each share counts what its process admitted before the fault: the window admits the limit', async () => {
      const fleet = fleetOf('fixed-window', 4)
      fleet.at(0)
      const admittedBefore = await fleet.offer(before)
      fleet.at(faultAt)
      fleet.shared.failing = true
      const duringFault = await fleet.offer(150)
      expect(admittedBefore + duringFault).toBe(LIMIT)
    })

    it.each(['stalled', 'emptied'] as const)(
      'once the shared store is back (%s), the window admits no more than the limit, and the next window after the hold admits the limit again',
      async (back) => {
        const fleet = fleetOf('fixed-window', 4)
        fleet.at(0)
        let admitted = await fleet.offer(before)
        fleet.at(faultAt)
        fleet.shared.failing = true
        admitted += await fleet.offer(20)
        fleet.shared.failing = false
        if (back === 'emptied') fleet.shared.empty()
        fleet.at(faultAt + 500)
        admitted += await fleet.offer(150)
        expect(admitted).toBe(LIMIT)
        // The hold lasts a window after the fallback's last decision: two windows on, the store decides alone.
        fleet.at(2 * WINDOW + faultAt + 600)
        expect(await fleet.offer(150)).toBe(LIMIT)
      },
    )
  })

  it.each(['fixed-window', 'sliding-window', 'sliding-log'] as const)(
    '%s: a store emptied with no failure seen (FLUSHALL) grants no more of the window than the limit',
    async (algorithm) => {
      const fleet = fleetOf(algorithm, 4)
      fleet.at(1000)
      let admitted = await fleet.offer(30)
      fleet.shared.empty()
      fleet.at(2000)
      admitted += await fleet.offer(150)
      // Each process's first decision after the flush finds the store counting fewer than it admitted.
      expect(admitted).toBeLessThanOrEqual(LIMIT)
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - 4)
    },
  )

  it.each(['sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const)(
    '%s: what the fleet admitted before a fault and after an emptied store comes back stays within the limit over the window',
    async (algorithm) => {
      const fleet = fleetOf(algorithm, 4)
      fleet.at(1000)
      let admitted = await fleet.offer(30)
      fleet.at(2000)
      fleet.shared.failing = true
      admitted += await fleet.offer(30)
      fleet.shared.failing = false
      fleet.shared.empty()
      fleet.at(3000)
      admitted += await fleet.offer(150)
      // Within the 2 s, at most the limit (a bucket refills 200 × 2/10 = 40 in that time).
      expect(admitted).toBeLessThanOrEqual(algorithm === 'token-bucket' || algorithm === 'gcra' ? LIMIT + 40 : LIMIT)
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - 4)
    },
  )
})

describe('FallbackShare by weight', () => {
  // Seed 003: 50 a minute on two nodes that take 90 % and 10 % of the traffic: 45 and 5.
  const admittedAt9010 = async (big: FallbackShare, small: FallbackShare) => {
    const limits = { limit: 50, window: '1min', algorithm: 'fixed-window' } as const
    const bigNode = createLimiter({ limits, store: big })
    const smallNode = createLimiter({ limits, store: small })
    // 100 requests, 90 to one node and 10 to the other.
    return [await admittedOf(bigNode, 'k', 90), await admittedOf(smallNode, 'k', 10)]
  }

  it('weights 0.9 and 0.1 admit 45 and 5 of a limit of 50 under 90/10 traffic: the limit, where even halves admit 35', async () => {
    expect(await admittedAt9010(new FallbackShare({ weight: 0.9 }), new FallbackShare({ weight: 0.1 }))).toEqual([
      45, 5,
    ])
    expect(await admittedAt9010(new FallbackShare({ processes: 2 }), new FallbackShare({ processes: 2 }))).toEqual([
      25, 10,
    ])
  })

  it('refuses a weight that is not above 0 and at most 1, or a weight beside processes, naming it', () => {
    for (const weight of [0, -0.5, 1.5, Number.NaN, '0.5']) {
      expect(() => new FallbackShare({ weight: weight as number })).toThrow(
        `weight must be a share of each limit above 0 and at most 1`,
      )
    }
    expect(() => new FallbackShare({ weight: 1.5 })).toThrow(/1\.5/)
    expect(() => new FallbackShare({ weight: 0.5, processes: 2 })).toThrow(/weight .*cannot be given with processes/)
  })
})
