import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { StoreTimeoutError } from '../diagnostics/errors.js'
import { Deadlines } from './deadlines.js'

/** A promise with its settle functions, answered when the test says. */
function deferred<T>() {
  let resolve: (value: T) => void = () => {}
  let reject: (error: unknown) => void = () => {}
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** What a settled promise came to, by the time the test looks. */
function track<T>(promise: Promise<T>) {
  const seen: { value?: T; error?: unknown; settled: boolean } = { settled: false }
  promise.then(
    (value) => Object.assign(seen, { value, settled: true }),
    (error: unknown) => Object.assign(seen, { error, settled: true }),
  )
  return seen
}

describe('Deadlines: one timer for a limiter’s store calls', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('rejects with a StoreTimeoutError at the timeout, not a millisecond before', async () => {
    const deadlines = new Deadlines(100)
    const call = track(deadlines.settle(deferred<number>().promise))
    await vi.advanceTimersByTimeAsync(99)
    expect(call.settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(call.error).toBeInstanceOf(StoreTimeoutError)
    expect((call.error as Error).message).toContain('100 ms')
  })

  it('times out each call at its own deadline, however many are pending, and lets answers in time through', async () => {
    const deadlines = new Deadlines(100)
    const first = track(deadlines.settle(deferred<number>().promise))
    await vi.advanceTimersByTimeAsync(30)
    const answered = deferred<number>()
    const second = track(deadlines.settle(answered.promise))
    await vi.advanceTimersByTimeAsync(20)
    const third = track(deadlines.settle(deferred<number>().promise))
    answered.resolve(7)
    await vi.advanceTimersByTimeAsync(49) // t = 99
    expect([first.settled, second.value, third.settled]).toEqual([false, 7, false])
    await vi.advanceTimersByTimeAsync(1) // t = 100: the first call's deadline
    expect(first.error).toBeInstanceOf(StoreTimeoutError)
    expect(third.settled).toBe(false)
    await vi.advanceTimersByTimeAsync(49) // t = 149
    expect(third.settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1) // t = 150: the third call's
    expect(third.error).toBeInstanceOf(StoreTimeoutError)
  })

  it('passes a store error through, and swallows an answer or error that comes after the timeout', async () => {
    const deadlines = new Deadlines(50)
    const failing = deferred<number>()
    const failed = track(deadlines.settle(failing.promise))
    failing.reject(new Error('down'))
    const late = deferred<number>()
    const timedOut = track(deadlines.settle(late.promise))
    await vi.advanceTimersByTimeAsync(50)
    expect((failed.error as Error).message).toBe('down')
    expect(timedOut.error).toBeInstanceOf(StoreTimeoutError)
    late.reject(new Error('too late')) // no unhandled rejection: the caller's promise is settled already
    await vi.advanceTimersByTimeAsync(1)
    expect(timedOut.error).toBeInstanceOf(StoreTimeoutError)
  })

  it('starts again after an idle spell: a call long after the last one still times out on time', async () => {
    const deadlines = new Deadlines(100)
    const quick = deferred<number>()
    const answered = track(deadlines.settle(quick.promise))
    quick.resolve(1)
    await vi.advanceTimersByTimeAsync(1000)
    expect(answered.value).toBe(1)
    const call = track(deadlines.settle(deferred<number>().promise))
    await vi.advanceTimersByTimeAsync(99)
    expect(call.settled).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(call.error).toBeInstanceOf(StoreTimeoutError)
  })
})

describe('Deadlines in a Node process', () => {
  it('keeps no process alive once every call is answered: a script exits without waiting out the timeout', async () => {
    const module = fileURLToPath(new URL('./deadlines.ts', import.meta.url))
    const script = `
      import { Deadlines } from ${JSON.stringify(module)}
      const deadlines = new Deadlines(10_000)
      console.log(await deadlines.settle(new Promise((r) => setTimeout(() => r('answered'), 20))))
    `
    const started = Date.now()
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 9000 },
    )
    expect(stdout.trim()).toBe('answered')
    // The timer is set for 10 s; the process ends long before (start-up takes well under 9 s).
    expect(Date.now() - started).toBeLessThan(9000)
  })
})
