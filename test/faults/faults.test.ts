import { describe, expect, it } from 'vitest'
import { privateRedisAvailable } from '../support/redis.js'
import { runFailover, runFaultSuite, SHORT, table, WAITED_MS } from './run.js'

// The short form: three app processes, one per client library (ioredis, iovalkey, node-redis), every fault once. `pnpm test:faults` runs the long form and
// prints the table of test/faults/README.md.
describe.skipIf(!(await privateRedisAvailable()))('faults: app processes sharing one Redis', () => {
  it('bounds waits, recovers by itself, never over-admits after recovery, and nothing crashes', async () => {
    const result = await runFaultSuite(SHORT)
    console.log(table(result))
    const { timeoutMs, cooldownMs, limit, tickMs, windowMs } = SHORT.worker
    expect(result.unhandled).toBe(0)
    expect(result.exitCodes).toEqual(result.exitCodes.map(() => 0))
    // Requests in flight when the store stops answering: one timeout's worth of load per process.
    const inFlight = Math.ceil(timeoutMs / tickMs) * 2 * SHORT.workers
    for (const f of result.faults) {
      // Nobody waits much past the timeout (scheduling slack on a busy machine).
      expect(f.longestWaitMs, f.fault).toBeLessThan(timeoutMs + 300)
      expect(f.waitedBeforeOpen, f.fault).toBeLessThanOrEqual(inFlight + 5 * SHORT.workers)
      // Back on the store within one cooldown (plus a probe's timeout and a reconnect) of the fault's end.
      expect(f.recoveryMs, f.fault).toBeLessThan(cooldownMs + timeoutMs + 800)
      expect(f.bySource.store, f.fault).toBeGreaterThan(0)
      // The store never admits more than the limit in a window while it keeps its counts, and at
      // most one window's worth more when a restart loses them.
      const lost = f.fault === 'kill -9' || f.fault === 'restart empty'
      expect(f.mostAdmittedPerWindow, f.fault).toBeLessThanOrEqual(lost ? 2 * limit : limit)
      expect(f.mostAdmittedPerWindow, f.fault).toBeGreaterThanOrEqual(limit)
    }
    const stalled = result.faults.filter((f) => f.fault === 'SIGSTOP, SIGCONT' || f.fault === 'CLIENT PAUSE')
    for (const f of stalled) {
      // The breaker opened: most decisions during the stall skipped the store instead of waiting.
      expect(f.bySource['breaker open'], f.fault).toBeGreaterThan(f.waited)
    }
    expect(WAITED_MS).toBeLessThan(timeoutMs)
    expect(windowMs).toBeGreaterThan(0)
  }, 60_000)

  it('a Cluster master killed and its replica promoted: bounded waits, recovery, no crash', async () => {
    const result = await runFailover(SHORT)
    console.log(table(result))
    const { timeoutMs, cooldownMs, limit } = SHORT.worker
    expect(result.unhandled).toBe(0)
    expect(result.exitCodes).toEqual(result.exitCodes.map(() => 0))
    const [f] = result.faults
    expect(f?.longestWaitMs).toBeLessThan(timeoutMs + 300)
    expect(f?.recoveryMs).toBeLessThan(cooldownMs + timeoutMs + 800)
    // Replication is asynchronous: the promoted replica may miss the last writes, at most a window's worth.
    expect(f?.mostAdmittedPerWindow).toBeLessThanOrEqual(2 * limit)
  }, 90_000)
})
