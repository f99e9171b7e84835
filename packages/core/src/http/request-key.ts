/** What a key function may return: a number or bigint is keyed by its decimal text (`42` and `'42'` are one key). */
export type RequestKey = string | number | bigint

/** The text a key function's result is counted under, or undefined when it names no client. */
export function keyText(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined
  if (typeof value === 'bigint') return String(value)
  return undefined
}
