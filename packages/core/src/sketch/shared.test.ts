import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CountMinSketch } from './count-min.js'
import { RateEstimator } from './rate-estimator.js'
import { MAX_SHARED_COUNT, SharedCountMinSketch } from './shared-count-min.js'
import { SharedInflightCounter } from './shared-inflight.js'
import { SharedRateEstimator } from './shared-rate-estimator.js'

function clock(start = 0) {
  const c = { t: start, now: () => c.t }
  return c
}

describe('SharedCountMinSketch', () => {
  it('gives the same estimates as CountMinSketch of the same shape and seed', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.nat(5)), { maxLength: 200 }), (events) => {
        const plain = new CountMinSketch({ hashes: 3, slots: 16, seed: 7 })
        const shared = new SharedCountMinSketch({ hashes: 3, slots: 16, seed: 7 })
        for (const [k, n] of events) expect(shared.incr(`k${k}`, n)).toBe(plain.incr(`k${k}`, n))
        for (let k = 0; k <= 30; k++) expect(shared.estimate(`k${k}`)).toBe(plain.estimate(`k${k}`))
      }),
      { numRuns: 50 },
    )
  })

  it('counts into the same memory through every object opened on its buffer', () => {
    const made = new SharedCountMinSketch({ hashes: 4, slots: 1024, seed: 3 })
    const opened = SharedCountMinSketch.from(made.buffer)
    expect([opened.hashes, opened.slots, opened.seed]).toEqual([4, 1024, 3])
    made.incr('origin', 2)
    expect(opened.incr('origin', 3)).toBe(5)
    opened.decr('origin', 1)
    expect(made.estimate('origin')).toBe(4)
    made.reset()
    expect(opened.estimate('origin')).toBe(0)
    expect(made.bytes).toBe(4 * 1024 * 4)
  })

  it('refuses a buffer that is not one of its own', () => {
    const rate = new SharedRateEstimator({ interval: 1000 })
    for (const buffer of [new ArrayBuffer(256), new SharedArrayBuffer(256), rate.buffer, 'buffer']) {
      expect(() => SharedCountMinSketch.from(buffer as SharedArrayBuffer)).toThrow(
        expect.objectContaining({ name: 'ConfigError', field: 'buffer' }),
      )
    }
  })

  it('throws and adds nothing when a 32-bit counter would overflow', () => {
    const sketch = new SharedCountMinSketch({ hashes: 2, slots: 8 })
    sketch.incr('a', MAX_SHARED_COUNT - 1)
    expect(() => sketch.incr('a', 2)).toThrow(RangeError)
    expect(sketch.estimate('a')).toBe(MAX_SHARED_COUNT - 1)
    expect(sketch.incr('a', 1)).toBe(MAX_SHARED_COUNT)
  })
})

describe('SharedRateEstimator', () => {
  it('reads as RateEstimator on any trace in one thread', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 1500 }), fc.nat(3)), {
          maxLength: 200,
        }),
        (events) => {
          const c = clock(1_700_000_000_000)
          const plain = new RateEstimator({ interval: 1000, hashes: 2, slots: 4, now: c.now })
          const shared = new SharedRateEstimator({ interval: 1000, hashes: 2, slots: 4, now: c.now })
          for (const [k, dt, n] of events) {
            c.t += dt
            expect(shared.observe(`k${k}`, n)).toBe(plain.observe(`k${k}`, n))
            for (let key = 0; key < 8; key++) expect(shared.components(`k${key}`)).toEqual(plain.components(`k${key}`))
          }
        },
      ),
      { numRuns: 50 },
    )
  })

  it('shares counts with an estimator opened on its buffer, each on its own clock', () => {
    const c = clock(5_000)
    const made = new SharedRateEstimator({ interval: '1s', now: c.now })
    const opened = SharedRateEstimator.from(made.buffer, { now: c.now })
    expect(opened.interval).toBe(1000)
    made.observe('a', 5)
    opened.observe('a', 5)
    c.t = 6_250
    expect(opened.rate('a')).toBe(10)
    expect(made.components('a')).toEqual({ previous: 10, current: 0, interval: 1000, fraction: 0.25 })
  })

  it('counts a thread whose clock lags into the newest interval another opened', () => {
    const fast = clock(7_000)
    const slow = clock(4_100)
    const made = new SharedRateEstimator({ interval: 1000, now: fast.now })
    const lagging = SharedRateEstimator.from(made.buffer, { now: slow.now })
    made.observe('a', 1)
    expect(lagging.observe('a', 2)).toBe(3)
    expect(lagging.components('a')).toMatchObject({ current: 3, fraction: 0 })
  })

  it('validates its options, naming the field', () => {
    for (const [options, field] of [
      [{ interval: 0 }, 'interval'],
      [{ interval: 1.5 }, 'interval'],
      [{ interval: 2 ** 31 }, 'interval'],
      [{ interval: 1000, slots: 0 }, 'slots'],
      [{ interval: 1000, now: 5 }, 'now'],
    ] as const) {
      expect(() => new SharedRateEstimator(options as never)).toThrow(
        expect.objectContaining({ name: 'ConfigError', field }),
      )
    }
    expect(() => SharedRateEstimator.from(new SharedCountMinSketch({ hashes: 4, slots: 1024 }).buffer)).toThrow(
      expect.objectContaining({ field: 'buffer' }),
    )
    expect(new SharedRateEstimator({ interval: 1000 }).bytes).toBe(2 * 4 * 1024 * 4)
  })
})

describe('SharedInflightCounter', () => {
  it('counts acquisitions from every object on its buffer until each guard is released once', () => {
    const made = new SharedInflightCounter()
    const opened = SharedInflightCounter.from(made.buffer)
    const a = made.acquire('origin')
    const b = opened.acquire('origin', 2)
    expect(b.count).toBe(3)
    expect(made.count('origin')).toBe(3)
    b.release()
    b.release()
    expect(made.count('origin')).toBe(1)
    a.release()
    expect(opened.count('origin')).toBe(0)
    expect(made.bytes).toBe(4 * 8192 * 4)
  })
})
