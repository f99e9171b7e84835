import { describe, expect, it } from 'vitest'
import { parsePolicies } from '../policies/policy.js'
import { MemoryStore } from '../stores/memory-store.js'
import { createLimiter } from './limiter.js'
import { MAX_KEY_LENGTH, storedKey } from './stored-key.js'

describe('storedKey', () => {
  it('keeps keys up to the maximum as they are', () => {
    const longest = 'k'.repeat(MAX_KEY_LENGTH)
    expect(storedKey(longest)).toBe(longest)
    expect(storedKey('user:42')).toBe('user:42')
  })

  it('bounds a longer key to a length no key kept as it is has, the same in every call', () => {
    const long = `token:${'x'.repeat(100_000)}`
    const stored = storedKey(long)
    expect(stored).toMatch(/^token:x{234}#[0-9a-f]{16}$/)
    expect(stored.length).toBe(MAX_KEY_LENGTH + 1)
    expect(storedKey(`token:${'x'.repeat(100_000)}`)).toBe(stored)
  })

  it('tells apart long keys that differ only after the kept part', () => {
    const prefix = 'p'.repeat(1000)
    const stored = new Set(Array.from({ length: 10_000 }, (_, i) => storedKey(`${prefix}${i}`)))
    expect(stored.size).toBe(10_000)
  })

  it('a limiter stores long keys bounded: a 100 KB key costs the store 257 characters and keeps its own count', async () => {
    const store = new MemoryStore()
    const limiter = createLimiter({ limits: '1/min', store })
    const ann = `ann:${'a'.repeat(100_000)}`
    const bob = `${ann.slice(0, -1)}b`
    expect((await limiter.consume(ann)).allowed).toBe(true)
    expect((await limiter.consume(ann)).allowed).toBe(false)
    expect((await limiter.consume(bob)).allowed).toBe(true)
    expect(store.size).toBe(2)
    const [ofAnn] = store.peek(storedKey(ann), parsePolicies('1/min'))
    expect(ofAnn?.remaining).toBe(0)
  })
})
