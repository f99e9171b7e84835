import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest'
import { createLimiter } from '../limiter/limiter.js'
import { MemoryStore } from './memory-store.js'

describe('a MemoryStore full of limited keys', () => {
  let warn: MockInstance<typeof console.warn>
  beforeEach(() => {
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(() => warn.mockRestore())

  it('warns once, with maxKeys, that new keys go to onStoreError', async () => {
    const clock = { now: 1_800_000_000_000 }
    const store = new MemoryStore({ maxKeys: 10, now: () => clock.now })
    const limiter = createLimiter({ limits: '1/min', store, onStoreError: 'allow' })
    for (let i = 0; i < 10; i++) expect((await limiter.consume(`client${i}`)).allowed).toBe(true)
    const newcomers = await Promise.all(Array.from({ length: 5 }, (_, i) => limiter.consume(`new${i}`)))
    // Under the default 'allow' every new client is admitted, unlimited: what the warning says.
    expect(newcomers.map((d) => [d.allowed, d.source])).toEqual(Array(5).fill([true, 'error']))
    const full = warn.mock.calls.map((call) => String(call[0])).filter((m) => m.includes('SLUICE_MEMORY_STORE_FULL'))
    expect(full).toEqual([expect.stringMatching(/^\[sluice\] SLUICE_MEMORY_STORE_FULL: all 10 keys \(maxKeys\)/)])
    // The limited keys stay limited: the store forgets no key that is limited.
    expect((await limiter.consume('client3')).allowed).toBe(false)
  })
})
