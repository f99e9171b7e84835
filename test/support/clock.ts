import { MemoryStore } from '@sluice/core'

/** A whole minute, so every fixed window starts on the clock's start. */
export const T0 = 1_800_000_000_000

/** A clock the test moves by hand (`clock.now += ms`), starting at `start`. */
export function manualClock(start = T0): { clock: { now: number }; now: () => number } {
  const clock = { now: start }
  return { clock, now: () => clock.now }
}

/** A MemoryStore on a clock the test moves by hand, starting at `start`. */
export function clockedStore(start = T0): { clock: { now: number }; store: MemoryStore } {
  const { clock, now } = manualClock(start)
  return { clock, store: new MemoryStore({ now }) }
}
