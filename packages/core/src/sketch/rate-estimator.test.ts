import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RateEstimator } from './rate-estimator.js'

function clock(start = 0) {
  const c = { t: start, now: () => c.t }
  return c
}

describe('RateEstimator', () => {
  it('reports the last complete interval, and the proportional blend (pingora’s test)', () => {
    const c = clock(1_000_000)
    const rate = new RateEstimator({ interval: '1s', now: c.now })
    for (let i = 0; i < 5; i++) rate.observe('a')
    c.t += 1000
    expect(rate.observe('a', 4)).toBe(4)
    expect(rate.rate('a')).toBe(5)
    c.t += 750
    expect(rate.components('a')).toEqual({ previous: 5, current: 4, interval: 1000, fraction: 0.75 })
    expect(rate.proportionalRate('a')).toBe(5 * 0.25 + 4)
  })

  it('divides by the interval in seconds', () => {
    const c = clock()
    const rate = new RateEstimator({ interval: 2000, now: c.now })
    rate.observe('a', 10)
    c.t = 2000
    expect(rate.rate('a')).toBe(5)
  })

  it('rotates lazily: one interval later the counts move to previous, two later they are gone', () => {
    const c = clock(10_000)
    const rate = new RateEstimator({ interval: 1000, now: c.now })
    rate.observe('a', 3)
    c.t = 11_999
    expect(rate.components('a')).toMatchObject({ previous: 3, current: 0 })
    c.t = 12_000
    expect(rate.components('a')).toMatchObject({ previous: 0, current: 0 })
    expect(rate.rate('a')).toBe(0)
  })

  it('treats a clock stepping back as standing still', () => {
    const c = clock(5_500)
    const rate = new RateEstimator({ interval: 1000, now: c.now })
    rate.observe('a', 2)
    c.t = 4_000
    expect(rate.observe('a')).toBe(3)
    expect(rate.components('a').fraction).toBe(0)
  })

  it('never reads below the true counts of the current and previous interval', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 400 }), fc.nat(3)), {
          maxLength: 300,
        }),
        (events) => {
          const c = clock()
          const rate = new RateEstimator({ interval: 1000, hashes: 2, slots: 4, now: c.now })
          const log: [number, number, number][] = []
          for (const [k, dt, n] of events) {
            c.t += dt
            rate.observe(`k${k}`, n)
            log.push([k, c.t, n])
            const index = Math.floor(c.t / 1000)
            for (let key = 0; key < 8; key++) {
              let previous = 0
              let current = 0
              for (const [k2, t, n2] of log) {
                if (k2 !== key) continue
                if (Math.floor(t / 1000) === index) current += n2
                if (Math.floor(t / 1000) === index - 1) previous += n2
              }
              const got = rate.components(`k${key}`)
              expect(got.current).toBeGreaterThanOrEqual(current)
              expect(got.previous).toBeGreaterThanOrEqual(previous)
            }
          }
        },
      ),
      { numRuns: 50 },
    )
  })

  it('validates its options, naming the field', () => {
    for (const [options, field] of [
      [{ interval: 0 }, 'interval'],
      [{ interval: 'soon' }, 'interval'],
      [{ interval: 1000, slots: -1 }, 'slots'],
      [{ interval: 1000, now: 5 }, 'now'],
    ] as const) {
      expect(() => new RateEstimator(options as never)).toThrow(expect.objectContaining({ name: 'ConfigError', field }))
    }
    expect(new RateEstimator({ interval: 1000 }).bytes).toBe(2 * 4 * 1024 * 8)
  })
})
