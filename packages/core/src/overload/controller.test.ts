import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import type { ObserveEvent } from '../diagnostics/observe.js'
import type { AdaptiveLimiterOptions } from './adaptive-options.js'
import { type AdaptiveLimiter, createAdaptiveLimiter, OverloadedError, type Refused, type Slot } from './controller.js'
import { type Scenario, simulate } from './sim-helpers.test-util.js'
import { ManualClock } from './simulation.test-util.js'

/** A limiter at a fixed limit (min = max), so admission alone is under test. */
function fixed(limit: number, options: AdaptiveLimiterOptions = {}): { limiter: AdaptiveLimiter; clock: ManualClock } {
  const clock = new ManualClock()
  const limiter = createAdaptiveLimiter({ min: limit, max: limit, initial: limit, probe: false, clock, ...options })
  return { limiter, clock }
}

const slot = (result: unknown): Slot => {
  expect(result).toMatchObject({ admitted: true })
  return result as Slot
}

describe('admission by class', () => {
  it('admits up to the limit at once, then queues and admits a waiter when a slot is released', async () => {
    const { limiter } = fixed(2)
    const a = slot(limiter.acquire())
    slot(limiter.acquire())
    const waiting = limiter.acquire()
    expect(waiting).toBeInstanceOf(Promise)
    expect(limiter.queued).toBe(1)
    a.release()
    expect(await waiting).toMatchObject({ admitted: true, class: 'default' })
    expect(limiter.inflight).toBe(2)
  })

  it('refuses a waiter after maxWait, and at once when there is no queue', async () => {
    const { limiter, clock } = fixed(1, { queue: { size: 5, maxWait: '30ms' } })
    slot(limiter.acquire())
    const waiting = limiter.acquire() as Promise<Refused>
    await clock.runUntil(29)
    expect(limiter.queued).toBe(1)
    await clock.runUntil(30)
    expect(await waiting).toMatchObject({ admitted: false, reason: 'timeout', waitedMs: 30, limit: 1 })
    const noQueue = fixed(1, { queue: false }).limiter
    slot(noQueue.acquire())
    expect(noQueue.acquire()).toMatchObject({ admitted: false, reason: 'limit' })
  })

  it('keeps a class its reserve: others cannot take the reserved slots even when it is idle', () => {
    const { limiter } = fixed(10, { classes: [{ name: 'critical', reserve: 0.3 }, 'default'], queue: false })
    for (let i = 0; i < 7; i++) slot(limiter.acquire('default'))
    expect(limiter.acquire('default')).toMatchObject({ admitted: false, reason: 'limit' })
    for (let i = 0; i < 3; i++) slot(limiter.acquire('critical'))
    expect(limiter.acquire('critical')).toMatchObject({ admitted: false })
    expect(limiter.stats().classes).toEqual({
      critical: { inflight: 3, queued: 0, refused: 1, reserved: 3 },
      default: { inflight: 7, queued: 0, refused: 1, reserved: 0 },
    })
  })

  it('admits waiters most critical first, and a full queue evicts its least critical waiter for a more critical one', async () => {
    const { limiter } = fixed(1, { classes: ['critical', 'default', 'sheddable'], queue: { size: 2, maxWait: '1s' } })
    const running = slot(limiter.acquire('default'))
    const shed = limiter.acquire('sheddable') as Promise<Slot | Refused>
    const normal = limiter.acquire('default') as Promise<Slot | Refused>
    // Full: a critical request pushes the sheddable one out; another sheddable is refused at once.
    const critical = limiter.acquire('critical') as Promise<Slot | Refused>
    expect(await shed).toMatchObject({ admitted: false, reason: 'evicted', class: 'sheddable' })
    expect(limiter.acquire('sheddable')).toMatchObject({ admitted: false, reason: 'queue-full' })
    // Nothing jumps the queue: a new default request waits behind the queued critical one.
    running.release()
    const first = slot(await critical)
    expect(limiter.stats().classes.default?.queued).toBe(1)
    first.release()
    expect(await normal).toMatchObject({ admitted: true, class: 'default' })
  })

  it('counts a class it does not know as the least critical', () => {
    const { limiter } = fixed(1, { classes: ['critical', 'batch'] })
    expect(slot(limiter.acquire('nightly')).class).toBe('batch')
  })

  it('refuses a waiter whose signal aborts, and one that arrives aborted', async () => {
    const { limiter } = fixed(1)
    slot(limiter.acquire())
    const controller = new AbortController()
    const waiting = limiter.acquire(undefined, controller.signal)
    controller.abort()
    expect(await waiting).toMatchObject({ admitted: false, reason: 'aborted' })
    expect(limiter.queued).toBe(0)
    expect(limiter.acquire(undefined, AbortSignal.abort())).toMatchObject({ admitted: false, reason: 'aborted' })
  })

  it('releases once however often release is called', () => {
    const { limiter } = fixed(2)
    const a = slot(limiter.acquire())
    slot(limiter.acquire())
    a.release()
    a.release()
    expect(limiter.inflight).toBe(1)
  })

  it('run releases the slot after the work and throws OverloadedError when refused', async () => {
    const { limiter } = fixed(1, { queue: false })
    await expect(limiter.run(() => 'done')).resolves.toBe('done')
    expect(limiter.inflight).toBe(0)
    const held = slot(limiter.acquire())
    await expect(limiter.run(() => 'never')).rejects.toBeInstanceOf(OverloadedError)
    held.release()
    await expect(limiter.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(limiter.inflight).toBe(0)
  })

  it('keeps the critical class ≥ 99 % successful at five times capacity, shedding the rest', async () => {
    const scenario: Scenario = { capacity: 30, workMs: 50, load: 5, durationMs: 20_000, criticalShare: 0.1 }
    const { records } = await simulate(scenario, (clock) =>
      createAdaptiveLimiter({ clock, classes: [{ name: 'critical', reserve: 0.1 }, 'default'] }),
    )
    const critical = records.filter((r) => r.class === 'critical' && r.at > 2_000)
    const ok = critical.filter((r) => r.result === 'ok').length
    expect(ok / critical.length).toBeGreaterThanOrEqual(0.99)
    const others = records.filter((r) => r.class === 'default' && r.at > 2_000)
    expect(others.filter((r) => r.result === 'refused').length / others.length).toBeGreaterThan(0.7)
  })
})

describe('probing the no-load latency', () => {
  it('measures the no-load latency at start at the min concurrency, then every `every`', async () => {
    const events: ObserveEvent[] = []
    const scenario: Scenario = { capacity: 30, workMs: 50, load: 3, durationMs: 40_000 }
    await simulate(scenario, (clock) =>
      createAdaptiveLimiter({ clock, probe: { every: '10s', samples: 20 }, observe: (e) => events.push(e) }),
    )
    const probes = events.filter((e) => e.type === 'overload-limit' && e.cause === 'probe-end')
    expect(probes.length).toBeGreaterThanOrEqual(4)
    for (const probe of probes) {
      if (probe.type === 'overload-limit') expect(probe.latencyMs).toBeGreaterThan(40)
    }
    const starts = events.filter((e) => e.type === 'overload-limit' && e.cause === 'probe-start')
    expect(starts.every((e) => e.type === 'overload-limit' && e.limit === 4)).toBe(true)
  })

  it('lets the limit rise after a dependency became slower for good, where without probes it stays at min', async () => {
    // AIMD backs off whenever latency exceeds twice the no-load latency: a service that became
    // three times slower holds it at min until a probe learns the new normal.
    const slower = async (probe: AdaptiveLimiterOptions['probe']) => {
      const clock = new ManualClock()
      const limiter = createAdaptiveLimiter({ algorithm: 'aimd', clock, probe })
      const fast: Scenario = { capacity: 30, workMs: 50, load: 3, durationMs: 5_000 }
      await simulate(fast, () => limiter, clock)
      const slow: Scenario = { capacity: 30, workMs: 150, load: 3, durationMs: 30_000 }
      return (await simulate(slow, () => limiter, clock)).limits
    }
    const withProbes = await slower({ every: '10s' })
    const without = await slower(false)
    expect(without.slice(-5)).toEqual([4, 4, 4, 4, 4])
    expect(Math.min(...withProbes.slice(-5))).toBeGreaterThanOrEqual(30)
  })
})

describe('the event-loop delay signal', () => {
  it('cuts the limit while the p99 delay is over the threshold, whatever the latency says, and resets the histogram', async () => {
    let delayMs = 0
    let resets = 0
    const histogram = { percentile: (p: number) => (p === 99 ? delayMs * 1e6 : 0), reset: () => void resets++ }
    const clock = new ManualClock()
    const limiter = createAdaptiveLimiter({ clock, probe: false, eventLoopDelay: { histogram, threshold: '50ms' } })
    const scenario: Scenario = { capacity: 30, workMs: 50, load: 3, durationMs: 5_000 }
    const calm = (await simulate(scenario, () => limiter, clock)).limits.at(-1) as number
    expect(calm).toBeGreaterThan(30)
    delayMs = 80
    const blocked = (await simulate(scenario, () => limiter, clock)).limits.at(-1) as number
    expect(blocked).toBe(4)
    expect(resets).toBeGreaterThan(50)
  })
})

describe('events', () => {
  it('reports each admission, wait, refusal and release with the class and the counts', async () => {
    const events: ObserveEvent[] = []
    const { limiter } = fixed(1, { observe: (e) => events.push(e), queue: { size: 1, maxWait: '1s' } })
    const held = slot(limiter.acquire())
    const waiting = limiter.acquire()
    limiter.acquire()
    held.release('ignore')
    await waiting
    expect(events).toEqual([
      expect.objectContaining({
        type: 'overload',
        outcome: 'admitted',
        class: 'default',
        inflight: 1,
        queued: 0,
        limit: 1,
      }),
      expect.objectContaining({ type: 'overload', outcome: 'queued', inflight: 1, queued: 1, classQueued: 1 }),
      expect.objectContaining({ type: 'overload', outcome: 'refused', reason: 'queue-full', waitedMs: 0 }),
      expect.objectContaining({ type: 'overload', outcome: 'released', inflight: 0, classInflight: 0, queued: 1 }),
      expect.objectContaining({ type: 'overload', outcome: 'admitted', inflight: 1, queued: 0 }),
    ])
  })
})

describe('options', () => {
  const cases: [AdaptiveLimiterOptions, string, unknown][] = [
    [{ min: 50, max: 10 }, 'min', 50],
    [{ algorithm: 'gradient' as never }, 'algorithm', 'gradient'],
    [{ algorithm: { name: 'vegas', tolerance: 2 } as never }, 'tolerance', 2],
    [{ classes: [{ name: 'critical', reserve: 1.2 }] }, 'classes[0].reserve', 1.2],
    [
      {
        classes: [
          { name: 'a', reserve: 0.6 },
          { name: 'b', reserve: 0.6 },
        ],
      },
      'classes',
      undefined,
    ],
    [{ classes: ['a', 'a'] }, 'classes[1].name', 'a'],
    [{ initial: 2000 }, 'initial', 2000],
    [{ queue: { size: -1 } }, 'queue.size', -1],
    [{ queue: { maxWait: '5 parsecs' } }, 'queue.maxWait', '5 parsecs'],
    [{ probe: { every: 0 } }, 'probe.every', 0],
    [{ window: 'soon' }, 'window', 'soon'],
    [{ eventLoopDelay: { threshold: '50ms' } as never }, 'eventLoopDelay.histogram', undefined],
    [{ limit: 10 } as never, 'limit', 10],
  ]
  it.each(cases)('%j is a ConfigError naming %s', (options, field, value) => {
    let error: unknown
    try {
      createAdaptiveLimiter(options)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).field).toBe(field)
    if (value !== undefined) expect((error as ConfigError).value).toEqual(value)
  })

  it('says what it meant for an unknown algorithm and a share over 100 %', () => {
    expect(() => createAdaptiveLimiter({ algorithm: 'vegsa' as never })).toThrow(/did you mean 'vegas'/)
    expect(() =>
      createAdaptiveLimiter({
        classes: [
          { name: 'a', reserve: 0.7 },
          { name: 'b', reserve: 0.5 },
        ],
      }),
    ).toThrow(/reserve 120 % of the limit together/)
  })
})
