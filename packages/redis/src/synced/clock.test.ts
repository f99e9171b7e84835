import { describe, expect, it } from 'vitest'
import { type LocalClocks, STEP_MS, SyncClock } from './clock.js'

/** A wall clock and a monotonic one that move together until the wall clock is stepped. */
function clocks(): LocalClocks & { advance(ms: number): void; step(ms: number): void } {
  let wall = 1_700_000_000_000
  let monotonic = 5_000
  return {
    wall: () => wall,
    monotonic: () => monotonic,
    advance(ms) {
      wall += ms
      monotonic += ms
    },
    step(ms) {
      wall += ms
    },
  }
}

describe('SyncClock: window time follows Redis, not a stepped local clock', () => {
  const SERVER_AHEAD = 250

  for (const step of [3_600_000, -30_000]) {
    it(`a wall-clock step of ${step} ms: window time goes on as before at once, and the next reply is taken whatever its round trip`, () => {
      const local = clocks()
      const clock = new SyncClock(undefined, local)
      clock.checkStep()
      // A fast reply (2 ms round trip) sets the offset: window time = local + 250.
      clock.measure(local.wall(), local.wall() + 2, local.wall() + 1 + SERVER_AHEAD)
      expect(clock.time()).toBe(local.wall() + SERVER_AHEAD)
      local.advance(100)
      expect(clock.checkStep()).toBe(false)
      const before = clock.time()
      local.step(step)
      local.advance(100)
      expect(clock.checkStep()).toBe(true)
      // Redis's clock did not step: window time moved by the 100 ms that passed, not by the step.
      expect(clock.time()).toBe(before + 100)
      // A slower reply (40 ms) than the one kept would be ignored within 10 s; after a step it is taken.
      const asked = local.wall()
      clock.measure(asked, asked + 40, asked + 20 + SERVER_AHEAD + 7)
      expect(clock.time()).toBe(local.wall() + SERVER_AHEAD + 7)
    })
  }

  it("Redis's clock steps: a slower reply that cannot agree with the kept offset is taken at once, one that can is not", () => {
    const local = clocks()
    const clock = new SyncClock(undefined, local)
    clock.measure(local.wall(), local.wall() + 2, local.wall() + 1 + SERVER_AHEAD)
    local.advance(1_000)
    // 40 ms round trip, its midpoint 15 ms off the kept offset: within the two errors (1 + 20), kept.
    let asked = local.wall()
    clock.measure(asked, asked + 40, asked + 20 + SERVER_AHEAD + 15)
    expect(clock.time()).toBe(local.wall() + SERVER_AHEAD)
    // Redis's clock an hour ahead: no round trip explains that, taken at once.
    local.advance(1_000)
    asked = local.wall()
    clock.measure(asked, asked + 40, asked + 20 + SERVER_AHEAD + 3_600_000)
    expect(clock.time()).toBe(local.wall() + SERVER_AHEAD + 3_600_000)
    // Corrected back a second later: taken at once again.
    local.advance(1_000)
    asked = local.wall()
    clock.measure(asked, asked + 40, asked + 20 + SERVER_AHEAD)
    expect(clock.time()).toBe(local.wall() + SERVER_AHEAD)
  })

  it('timers that fire late move both clocks alike: not a step', () => {
    const local = clocks()
    const clock = new SyncClock(undefined, local)
    clock.checkStep()
    local.advance(5_000)
    expect(clock.checkStep()).toBe(false)
    local.step(STEP_MS) // drift up to STEP_MS between checks is slewing, not a step
    expect(clock.checkStep()).toBe(false)
  })

  it('toLocal turns a window time (an admittedAt read on store.now()) back into the local clock it was read at', () => {
    const local = clocks()
    const clock = new SyncClock(undefined, local)
    clock.measure(local.wall(), local.wall() + 2, local.wall() + 1 + SERVER_AHEAD)
    const admittedAt = clock.time()
    const readAt = local.wall()
    local.advance(30_000)
    expect(admittedAt).toBe(readAt + SERVER_AHEAD)
    expect(clock.toLocal(admittedAt)).toBe(readAt)
  })

  it('an injected clock (tests) is window time itself: no offset, no step', () => {
    let now = 1_000
    const clock = new SyncClock(() => now)
    now += 3_600_000
    expect(clock.checkStep()).toBe(false)
    expect(clock.time()).toBe(now)
  })
})
