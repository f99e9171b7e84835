// The README's recommended configuration (RedisStore + FallbackShare + FleetSize) in four app
// processes on a private Redis, offered 3× the limit, a fault early and one late in a fixed
// window: the window of the fault admits about the limit in all, whoever decided. A 2 s window
// keeps it short; `pnpm tsx --conditions=source test/faults/fallback.ts` runs 10 s windows and every fault.
import { describe, expect, it } from 'vitest'
import { privateRedisAvailable } from '../support/redis.js'
import { runFallbackFaults, type SuiteOptions } from './run.js'

const WORKERS = 4
const LIMIT = 40
const WINDOW_MS = 2000
const options: SuiteOptions = {
  workers: WORKERS,
  faultMs: 600,
  recoveryMs: 0,
  baselineMs: 500,
  worker: {
    limit: LIMIT,
    windowMs: WINDOW_MS,
    timeoutMs: 200,
    cooldownMs: 300,
    tickMs: (WINDOW_MS * WORKERS) / (3 * LIMIT),
  },
}

describe.skipIf(!(await privateRedisAvailable()))('FallbackShare in four processes through Redis faults', () => {
  it('kill -9 early in a window and FLUSHALL late in one: each window of a fault admits about the limit', async () => {
    const result = await runFallbackFaults(
      options,
      [
        { fault: 'kill -9', offsetMs: 200 },
        { fault: 'FLUSHALL', offsetMs: 1800 },
      ],
      true,
    )
    console.log(result.windows)
    expect(result.unhandled).toBe(0)
    expect(result.exitCodes).toEqual(result.exitCodes.map(() => 0))
    expect(result.processes).toEqual(result.processes.map(() => WORKERS))
    for (const window of result.windows) {
      // Before: kill -9 admitted 2× (the fallbacks' shares from zero, then an empty Redis), FLUSHALL up to 2×.
      // A request in flight per process may land on either side of a window's edge.
      expect(window.admitted, window.fault).toBeLessThanOrEqual(LIMIT + WORKERS)
      expect(window.admitted, window.fault).toBeGreaterThanOrEqual(LIMIT - WORKERS)
      expect(window.admittedNext, window.fault).toBeLessThanOrEqual(LIMIT + WORKERS)
    }
  }, 40_000)
})
