import { createHash } from 'node:crypto'

/** Longer escaped keys are replaced by their SHA-256, so a hostile client cannot grow Redis keys. */
export const MAX_TAG_LENGTH = 200

/**
 * `%`, braces and lone surrogates (which UTF-8 would turn into U+FFFD, merging distinct keys).
 * Braces would move the Cluster hash tag; `%` is escaped so the mapping stays one-to-one.
 */
const UNSAFE = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
/** Any character UNSAFE could match: without one, escaping changes nothing. */
const MAYBE_UNSAFE = /[%{}\uD800-\uDFFF]/

/**
 * The hash tag for one client key: every Redis key of that client sits inside `{…}` with it, so
 * a multi-policy script touches one Cluster slot. One-to-one: escapes are `%` plus two hex
 * digits (`%25`, `%7B`, `%7D`) or four for a surrogate (`%D800`), and hashed keys start with
 * `%H`, which no escape produces.
 */
export function hashTag(key: string): string {
  // Most keys (addresses, ids) have nothing to escape: one cheap test instead of the replace.
  if (key.length > 0 && key.length <= MAX_TAG_LENGTH && !MAYBE_UNSAFE.test(key)) return key
  const escaped = key.replace(UNSAFE, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
  if (escaped.length <= MAX_TAG_LENGTH && escaped.length > 0) return escaped
  // An empty tag would make Redis hash the whole key name; hashing keeps one slot per client.
  return `%H${createHash('sha256').update(escaped).digest('base64url')}`
}
