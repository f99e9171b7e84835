import { ConfigError } from './errors.js'

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  sec: 1_000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
}

/** The units error messages list; `UNIT_ALIASES` are accepted as well. */
export const DURATION_UNITS = Object.keys(UNIT_MS)

/** Plural and long unit names people type ('100/minute', '15 minutes', '1 hours'). */
const UNIT_ALIASES: Readonly<Record<string, string>> = {
  msec: 'ms',
  msecs: 'ms',
  millisecond: 'ms',
  milliseconds: 'ms',
  secs: 's',
  second: 's',
  seconds: 's',
  mins: 'm',
  minute: 'm',
  minutes: 'm',
  hr: 'h',
  hrs: 'h',
  hours: 'h',
  days: 'd',
}

function unitMs(unit: string): number | undefined {
  const lower = unit.toLowerCase()
  const name = Object.hasOwn(UNIT_ALIASES, lower) ? (UNIT_ALIASES[lower] as string) : lower
  return Object.hasOwn(UNIT_MS, name) ? UNIT_MS[name] : undefined
}

/** `'5m'` → 300000, `'min'` → 60000, `'1.5s'` → 1500. Returns undefined when it is not a duration. */
export function parseDurationString(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$/i.exec(text)
  if (!match) return undefined
  const unit = unitMs(match[2] as string)
  if (unit === undefined) return undefined
  return (match[1] === undefined ? 1 : Number(match[1])) * unit
}

/**
 * A duration in whole milliseconds, given as a number of ms or a string such as `'30s'`.
 * Whole milliseconds keep every algorithm's arithmetic exact, and identical in Lua.
 */
export function toMilliseconds(field: string, value: unknown, { allowZero = false } = {}): number {
  const ms = typeof value === 'string' ? parseDurationString(value) : value
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new ConfigError(
      field,
      value,
      `must be a duration: milliseconds, or a string such as "30s" or "5m" (units: ${DURATION_UNITS.join(', ')})`,
    )
  }
  if (!Number.isInteger(ms)) throw new ConfigError(field, value, 'must be a whole number of milliseconds')
  if (ms < 0 || (ms === 0 && !allowZero)) {
    throw new ConfigError(field, value, allowZero ? 'must not be negative' : 'must be greater than 0')
  }
  return ms
}
