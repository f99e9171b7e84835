import { describe, expect, it } from 'vitest'
import { ConfigError } from './errors.js'
import { FallbackShare } from './fallback-share.js'
import { createLimiter } from './limiter.js'
import { MemoryStore } from './stores/memory-store.js'

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
