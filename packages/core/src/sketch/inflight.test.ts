import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InflightCounter, SketchInflightCounter } from './inflight.js'

describe.each([
  ['InflightCounter', () => new InflightCounter()],
  ['SketchInflightCounter', () => new SketchInflightCounter()],
])('%s', (_, make) => {
  it('counts acquisitions until their guards are released', () => {
    const inflight = make()
    const a = inflight.acquire('origin')
    const b = inflight.acquire('origin', 2)
    expect(a.count).toBe(1)
    expect(b.count).toBe(3)
    expect(inflight.count('origin')).toBe(3)
    b.release()
    expect(inflight.count('origin')).toBe(1)
    a.release()
    expect(inflight.count('origin')).toBe(0)
  })

  it('releases each guard exactly once, however often release is called', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 3 })), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 120 }),
        (acquires, releases) => {
          const inflight = make()
          const guards = acquires.map(([k, n]) => ({ n, guard: inflight.acquire(`k${k}`, n) }))
          const released = new Set<number>()
          for (const r of releases) {
            if (guards.length === 0) break
            const i = r % guards.length
            guards[i]?.guard.release()
            released.add(i)
          }
          for (let k = 0; k < 4; k++) {
            const open = guards
              .filter((g, i) => g.guard.key === `k${k}` && !released.has(i))
              .reduce((sum, g) => sum + g.n, 0)
            expect(inflight.count(`k${k}`)).toBe(open)
          }
        },
      ),
    )
  })
})

it('InflightCounter forgets a key once nothing is in flight', () => {
  const inflight = new InflightCounter()
  const guard = inflight.acquire('a')
  expect(inflight.size).toBe(1)
  guard.release()
  guard.release()
  expect(inflight.size).toBe(0)
})
