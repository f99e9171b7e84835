import { didYouMean } from '../diagnostics/did-you-mean.js'
import { ConfigError } from '../diagnostics/errors.js'

/**
 * Every unit a duration may be written in, and its length: the one list the parser, its errors
 * and the docs use. Lower case only: 'M' could be a month as well as a minute.
 */
export const DURATION_UNIT_MS = {
  ms: 1,
  msec: 1,
  msecs: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
} as const

/** A unit of a duration string: `'ms'`, `'s'`, `'min'`, `'hours'`, … */
export type DurationUnit = keyof typeof DURATION_UNIT_MS

/** Every unit, in `DURATION_UNIT_MS`'s order. */
export const DURATION_UNITS = Object.keys(DURATION_UNIT_MS) as DurationUnit[]

/** The units as error messages and the docs list them: the spellings of one length joined by `/`. */
export const DURATION_UNITS_TEXT = [...new Set(Object.values(DURATION_UNIT_MS))]
  .map((ms) => DURATION_UNITS.filter((unit) => DURATION_UNIT_MS[unit] === ms).join('/'))
  .join(', ')

const DURATION = /^\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$/i

/** `'5m'` → 300000, `'min'` → 60000, `'1.5s'` → 1500. Returns undefined when it is not a duration. */
export function parseDurationString(text: string): number | undefined {
  const match = DURATION.exec(text)
  if (!match) return undefined
  const unit = match[2] as string
  if (!Object.hasOwn(DURATION_UNIT_MS, unit)) return undefined
  return (match[1] === undefined ? 1 : Number(match[1])) * DURATION_UNIT_MS[unit as DurationUnit]
}

/** Units that name a calendar period (`PERIODS` in calendar.ts), which a fixed length cannot be. */
const CALENDAR_UNITS: Readonly<Record<string, string>> = {
  w: 'week',
  wk: 'week',
  wks: 'week',
  week: 'week',
  weeks: 'week',
  mo: 'month',
  mon: 'month',
  mos: 'month',
  month: 'month',
  months: 'month',
  y: 'year',
  yr: 'year',
  yrs: 'year',
  year: 'year',
  years: 'year',
}

/**
 * What to write instead of a duration string whose unit is unknown: `'; did you mean "5min"?'`,
 * a calendar period for weeks, months and years (with `limit` when the caller knows it), or an
 * empty string when nothing is close.
 */
export function durationHint(text: string, limit = 'n'): string {
  const match = DURATION.exec(text)
  if (!match) return ''
  const [, amount = '', unit = ''] = match
  if (unit === 'M')
    return `; "M" is not a unit: minutes are "m" or "min", and a month is a calendar period: { limit: ${limit}, period: 'month' }`
  const period = CALENDAR_UNITS[unit.toLowerCase()]
  if (period !== undefined) {
    return `; a ${period} is a calendar period, not a fixed window: write { limit: ${limit}, period: '${period}' } (it resets at the start of each ${period}, in timeZone)`
  }
  const closest = didYouMean(unit, DURATION_UNITS)
  return closest === undefined ? '' : `; did you mean "${amount}${closest}"?`
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
      `must be a duration: milliseconds, or a string such as "30s" or "5m"${
        typeof value === 'string' ? durationHint(value) : ''
      } (units: ${DURATION_UNITS_TEXT})`,
    )
  }
  if (!Number.isInteger(ms)) throw new ConfigError(field, value, 'must be a whole number of milliseconds')
  if (ms < 0 || (ms === 0 && !allowZero)) {
    throw new ConfigError(field, value, allowZero ? 'must not be negative' : 'must be greater than 0')
  }
  return ms
}
