import { describe, expect, it, vi } from 'vitest'
import { andThen, whenReady } from './contract.js'

describe('andThen', () => {
  it('goes on at once with a plain value, and after the promise with a promise', async () => {
    expect(andThen(2, (n) => n * 3)).toBe(6)
    const later = andThen(Promise.resolve(2), (n) => n * 3)
    expect(later).toBeInstanceOf(Promise)
    expect(await later).toBe(6)
  })
})

describe('whenReady', () => {
  it('uses a plain value in the same tick, and a promised one once it fulfils', async () => {
    const used: number[] = []
    whenReady(
      1,
      (n) => used.push(n),
      () => undefined,
    )
    expect(used).toEqual([1])
    whenReady(
      Promise.resolve(2),
      (n) => used.push(n),
      () => undefined,
    )
    expect(used).toEqual([1])
    await Promise.resolve()
    await Promise.resolve()
    expect(used).toEqual([1, 2])
  })

  it('sends a rejection, a throw from use, and a rejection of what use returns to fail', async () => {
    const failures: unknown[] = []
    const fail = (error: unknown) => failures.push(error)
    const rejected = new Error('rejected')
    const thrown = new Error('thrown')
    const returned = new Error('returned')
    whenReady(Promise.reject(rejected), () => undefined, fail)
    whenReady(
      1,
      () => {
        throw thrown
      },
      fail,
    )
    whenReady(1, () => Promise.reject(returned), fail)
    whenReady(
      Promise.resolve(1),
      () => {
        throw thrown
      },
      fail,
    )
    await vi.waitFor(() => expect(failures).toHaveLength(4))
    expect(failures.slice(0, 1)).toEqual([thrown])
    expect(failures).toEqual(expect.arrayContaining([rejected, returned, thrown]))
  })
})
