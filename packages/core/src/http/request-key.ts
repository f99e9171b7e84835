import { describe } from '../errors.js'

/** What a key function may return: a number or bigint is keyed by its decimal text (`42` and `'42'` are one key). */
export type RequestKey = string | number | bigint

/** The text a key function's result is counted under, or undefined when it names no client. */
export function keyText(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined
  if (typeof value === 'bigint') return String(value)
  return undefined
}

/** The one error a middleware logs when its key function first returns something that names no client. */
export function unusableKeyMessage(keyFunction: (...args: never[]) => unknown, value: unknown): string {
  const name = keyFunction.name && keyFunction.name !== 'key' ? ` (${keyFunction.name})` : ''
  const shown = value === '' ? 'an empty string' : value === undefined ? 'undefined' : describe(value)
  return (
    `[sluice] SLUICE_UNUSABLE_KEY: the key function${name} returned ${shown}, which names no client ` +
    '(a key is a non-empty string, a finite number or a bigint); such requests are keyed by the client IP ' +
    'instead. Reported once per middleware.'
  )
}
