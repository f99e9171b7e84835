import { describe, expect, it } from 'vitest'
import type { OverloadAlgorithm } from './adaptive-options.js'
import { createAdaptiveLimiter } from './controller.js'
import { goodput, type Scenario, simulate } from './sim-helpers.test-util.js'

// A service of 30 concurrent jobs of ~50 ms (600 requests/s), on a manual clock.
const base: Scenario = { capacity: 30, workMs: 50, load: 3, durationMs: 30_000 }
const ALGORITHMS: OverloadAlgorithm[] = ['gradient2', 'vegas', 'aimd']

describe.each(ALGORITHMS)('%s', (algorithm) => {
  it('converges near the capacity under three times the load it can serve, and serves ≥ 90 % of capacity', async () => {
    const { records, limits } = await simulate(base, (clock) => createAdaptiveLimiter({ algorithm, clock }))
    const settled = limits.slice(10)
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(base.capacity * 0.8)
    expect(Math.max(...settled)).toBeLessThanOrEqual(base.capacity * 2)
    expect(goodput(records, base, 5_000, 30_000)).toBeGreaterThan(0.9)
  })

  it('settles lower within 5 s when capacity halves, and rises back within 10 s when it is restored', async () => {
    const scenario: Scenario = {
      ...base,
      events: [
        { at: 10_000, capacity: 15 },
        { at: 20_000, capacity: 30 },
      ],
    }
    const { limits } = await simulate(scenario, (clock) => createAdaptiveLimiter({ algorithm, clock }))
    // limits[i] is the limit at i + 1 seconds.
    const before = limits[9] as number
    const halved = limits.slice(14, 20)
    expect(Math.max(...halved)).toBeLessThanOrEqual(before * 0.75)
    expect(Math.min(...halved)).toBeGreaterThanOrEqual(15 * 0.6)
    expect(limits[29] as number).toBeGreaterThanOrEqual(before * 0.85)
  })

  it('stays within min and max', async () => {
    const high = await simulate({ ...base, durationMs: 10_000 }, (clock) =>
      createAdaptiveLimiter({ algorithm, clock, max: 24 }),
    )
    expect(Math.max(...high.limits)).toBe(24)
    // Capacity collapses to 2: the limit stops at min.
    const low = await simulate({ ...base, durationMs: 15_000, events: [{ at: 2_000, capacity: 2 }] }, (clock) =>
      createAdaptiveLimiter({ algorithm, clock, min: 12, initial: 20 }),
    )
    expect(Math.min(...low.limits)).toBe(12)
    expect(low.limits.at(-1)).toBe(12)
  })
})
