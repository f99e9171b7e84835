import { createHash } from 'node:crypto'
import { hashTag, MAX_TAG_LENGTH } from '@sluice/redis'
import { describe, expect, it } from 'vitest'

/** hashTag skips the escaping replace for keys with nothing to escape; both paths must agree. No server needed. */
describe('hashTag', () => {
  it('keeps a key with nothing to escape as it is', () => {
    for (const key of ['198.51.100.7', 'user:42', 'ü🙂', 'a b\u0000c', 'x'.repeat(MAX_TAG_LENGTH)]) {
      expect(hashTag(key)).toBe(key)
    }
  })

  it('escapes %, braces and lone surrogates, and keeps surrogate pairs', () => {
    expect(hashTag('a{b}c')).toBe('a%7Bb%7Dc')
    expect(hashTag('100%')).toBe('100%25')
    expect(hashTag('a\uD800b')).toBe('a%D800b')
    expect(hashTag('\uDC00')).toBe('%DC00')
    expect(hashTag('🙂{')).toBe('🙂%7B')
  })

  it('hashes an empty key and one longer than MAX_TAG_LENGTH, escaped or not', () => {
    const hashed = (escaped: string) => `%H${createHash('sha256').update(escaped).digest('base64url')}`
    expect(hashTag('')).toBe(hashed(''))
    expect(hashTag('x'.repeat(MAX_TAG_LENGTH + 1))).toBe(hashed('x'.repeat(MAX_TAG_LENGTH + 1)))
    expect(hashTag(`${'x'.repeat(MAX_TAG_LENGTH - 1)}{`)).toBe(hashed(`${'x'.repeat(MAX_TAG_LENGTH - 1)}%7B`))
  })
})
