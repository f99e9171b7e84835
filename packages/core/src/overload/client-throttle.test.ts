import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { createClientThrottle, ThrottledError } from './client-throttle.js'

function setup(k = 2) {
  const clock = { now: 0 }
  let next = 0.5
  const throttle = createClientThrottle({ k, now: () => clock.now, random: () => next })
  const roll = (value: number): void => {
    next = value
  }
  return { clock, throttle, roll }
}

describe('createClientThrottle', () => {
  it('never rejects while the backend accepts', () => {
    const { throttle } = setup()
    for (let i = 0; i < 1000; i++) {
      expect(throttle.attempt()).toBe(true)
      throttle.accepted()
    }
    expect(throttle.probability).toBe(0)
  })

  it('rejects with probability (requests − K·accepts) / (requests + 1) once the backend refuses', () => {
    const { throttle, roll } = setup(2)
    for (let i = 0; i < 10; i++) {
      throttle.attempt()
      throttle.accepted()
    }
    // 10 accepted of 10; now 90 refused: (100 − 20) / 101.
    for (let i = 0; i < 90; i++) throttle.attempt()
    expect(throttle.probability).toBeCloseTo(80 / 101, 10)
    roll(80 / 101 - 0.001)
    expect(throttle.attempt()).toBe(false)
    // That local rejection counts as a request: (101 − 20) / 102.
    expect(throttle.probability).toBeCloseTo(81 / 102, 10)
    roll(81 / 102 + 0.001)
    expect(throttle.attempt()).toBe(true)
  })

  it('forgets what is older than the window, so a recovered backend is tried fully again', () => {
    const { clock, throttle } = setup()
    for (let i = 0; i < 100; i++) throttle.attempt()
    expect(throttle.probability).toBeGreaterThan(0.9)
    clock.now = 119_000
    expect(throttle.requests).toBe(100)
    clock.now = 126_000
    expect(throttle.requests).toBe(0)
    expect(throttle.probability).toBe(0)
  })

  it('call counts 429 and 503 answers and errors as refusals, anything else as accepted', async () => {
    const { throttle, roll } = setup()
    await throttle.call(() => ({ status: 200 }))
    await throttle.call(() => ({ status: 404 }))
    await throttle.call(() => ({ status: 503 }))
    await throttle.call(() => ({ status: 429 }))
    await expect(throttle.call(() => Promise.reject(new Error('reset')))).rejects.toThrow('reset')
    expect([throttle.requests, throttle.accepts]).toEqual([5, 2])
    roll(0.999)
    for (let i = 0; i < 20; i++) await throttle.call(() => ({ status: 503 }))
    roll(0)
    await expect(throttle.call(() => ({ status: 200 }))).rejects.toBeInstanceOf(ThrottledError)
  })

  it('rejects a K of 1 or less, a bad window and unknown options', () => {
    expect(() => createClientThrottle({ k: 1 })).toThrow(ConfigError)
    expect(() => createClientThrottle({ window: 'forever' })).toThrow(/window/)
    expect(() => createClientThrottle({ K: 2 } as never)).toThrow(/did you mean k/)
  })
})
