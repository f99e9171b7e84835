import { seededRandom } from '../testing/seeded-random.js'
import type { AdaptiveLimiter } from './controller.js'
import { type Gate, ManualClock, type RequestRecord, runLoad, SimulatedService } from './simulation.test-util.js'

/** The limiter as a simulation's gate: a slot, or undefined when refused. */
export function gateOf(limiter: AdaptiveLimiter): Gate {
  return (className) => {
    const result = limiter.acquire(className)
    if (result instanceof Promise) return result.then((r) => (r.admitted ? r : undefined))
    return (result as Awaited<typeof result>).admitted ? (result as { release(): void }) : undefined
  }
}

export interface Scenario {
  /** Concurrent jobs at full speed. */
  capacity: number
  /** Base work of a job, ms. */
  workMs: number
  /** Offered load as a multiple of capacity (capacity × 1000 / workMs requests per second). */
  load: number
  durationMs: number
  criticalShare?: number
  /** Changes to the service at times (ms). */
  events?: { at: number; capacity?: number }[]
}

/**
 * Runs `scenario` through `make(clock)`'s limiter and returns the records and the limit each
 * second. Pass `clock` to go on from an earlier run with the same limiter.
 */
export async function simulate(
  scenario: Scenario,
  make: (clock: ManualClock) => AdaptiveLimiter,
  clock = new ManualClock(7),
): Promise<{ records: RequestRecord[]; limits: number[]; limiter: AdaptiveLimiter }> {
  const service = new SimulatedService(clock, scenario.capacity)
  const limiter = make(clock)
  const limits: number[] = []
  const rps = (scenario.capacity * 1000) / scenario.workMs
  const records = await runLoad({
    clock,
    service,
    gate: gateOf(limiter),
    random: seededRandom(11),
    rate: () => scenario.load * rps,
    durationMs: scenario.durationMs,
    workMs: scenario.workMs,
    timeoutMs: 1000,
    criticalShare: scenario.criticalShare ?? 0,
    sampleEveryMs: 100,
    onSample: (time) => {
      for (const event of scenario.events ?? []) {
        if (event.at === time && event.capacity !== undefined) service.setCapacity(event.capacity)
      }
      if (time % 1000 === 0) limits.push(limiter.limit)
    },
  })
  return { records, limits, limiter }
}

/** Answers within the timeout per second, as a fraction of the service's capacity, for arrivals in [from, to). */
export function goodput(records: RequestRecord[], scenario: Scenario, from: number, to: number): number {
  const ok = records.filter((r) => r.at >= from && r.at < to && r.result === 'ok').length
  return ok / ((to - from) / 1000) / ((scenario.capacity * 1000) / scenario.workMs)
}
