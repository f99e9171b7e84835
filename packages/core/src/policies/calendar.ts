import { ConfigError } from '../diagnostics/errors.js'

/** The calendar periods a quota can reset on. */
export const PERIODS = ['day', 'week', 'month', 'year'] as const
/** One of `PERIODS`. */
export type Period = (typeof PERIODS)[number]

/** A calendar date: the day a period's cycle is anchored to (for example a billing day). */
export interface CalendarDate {
  readonly year: number
  readonly month: number
  readonly day: number
}

/** The start (inclusive) and end (exclusive) of one period, in epoch milliseconds. */
export interface PeriodBounds {
  readonly start: number
  readonly end: number
}

const DAY_MS = 86_400_000
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The formatter that reads wall-clock fields in `timeZone`; throws a `ConfigError` for an unknown zone. */
function formatterOf(timeZone: string, field = 'timeZone'): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      })
    } catch {
      throw new ConfigError(
        field,
        timeZone,
        'is not a time zone this runtime knows (an IANA name such as "Europe/Berlin" or "UTC")',
      )
    }
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** Throws a `ConfigError` naming `field` unless `timeZone` is an IANA zone the runtime knows. */
export function assertTimeZone(timeZone: unknown, field: string): string {
  if (typeof timeZone !== 'string' || timeZone === '') {
    throw new ConfigError(field, timeZone, 'must be an IANA time zone name such as "Europe/Berlin" or "UTC"')
  }
  formatterOf(timeZone, field)
  return timeZone
}

/** The wall clock in `timeZone` at `epoch`, as the UTC epoch of the same wall-clock reading. */
function wallClock(epoch: number, timeZone: string): number {
  const fields: Record<string, number> = {}
  for (const part of formatterOf(timeZone).formatToParts(epoch)) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value)
  }
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = fields
  return Date.UTC(year, month - 1, day, hour, minute, second) + (epoch - Math.floor(epoch / 1000) * 1000)
}

/** The local calendar date in `timeZone` at `epoch`. */
export function dateIn(epoch: number, timeZone: string): CalendarDate {
  const wall = new Date(wallClock(epoch, timeZone))
  return { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() }
}

/**
 * The first instant of a local date in `timeZone`. Where midnight does not exist (a
 * daylight-saving gap at midnight, as in America/Santiago) the day starts when the clocks jump;
 * where it exists twice, at the first.
 */
export function startOfDay(date: CalendarDate, timeZone: string): number {
  const wall = Date.UTC(date.year, date.month - 1, date.day)
  let best = Number.POSITIVE_INFINITY
  // The offsets in force a day either side cover any transition near this midnight.
  for (const probe of [wall - DAY_MS, wall, wall + DAY_MS]) {
    const candidate = wall - (wallClock(probe, timeZone) - probe)
    if (candidate < best && wallClock(candidate, timeZone) >= wall) best = candidate
  }
  return best
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** `date` moved by whole months, its day kept or, in a month too short, that month's last day. */
function addMonths(year: number, month: number, day: number, months: number): CalendarDate {
  const index = year * 12 + (month - 1) + months
  const y = Math.floor(index / 12)
  const m = index - y * 12 + 1
  return { year: y, month: m, day: Math.min(day, daysInMonth(y, m)) }
}

function addDays(date: CalendarDate, days: number): CalendarDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + days))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

function compareDates(a: CalendarDate, b: CalendarDate): number {
  return a.year - b.year || a.month - b.month || a.day - b.day
}

/**
 * The period of `period` in `timeZone` that holds `now`. Without an anchor: days start at local
 * midnight, weeks on Monday, months on the 1st, years on 1 January. With one, weeks start on the
 * anchor's weekday, months on its day (in a month without that day, on the month's last day),
 * years on its month and day (29 February is 28 February in other years).
 */
export function periodBounds(now: number, period: Period, timeZone: string, anchor?: CalendarDate): PeriodBounds {
  const today = dateIn(now, timeZone)
  const [first, next] = periodDates(today, period, anchor)
  return { start: startOfDay(first, timeZone), end: startOfDay(next, timeZone) }
}

/** The first local date of the period holding `today`, and the first of the next. */
function periodDates(
  today: CalendarDate,
  period: Period,
  anchor: CalendarDate | undefined,
): [CalendarDate, CalendarDate] {
  switch (period) {
    case 'day':
      return [today, addDays(today, 1)]
    case 'week': {
      const weekday = (date: CalendarDate) => new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay()
      const startDay = anchor === undefined ? 1 : weekday(anchor)
      const first = addDays(today, -((weekday(today) - startDay + 7) % 7))
      return [first, addDays(first, 7)]
    }
    case 'month': {
      const day = anchor?.day ?? 1
      let first = addMonths(today.year, today.month, day, 0)
      if (compareDates(first, today) > 0) first = addMonths(today.year, today.month, day, -1)
      return [first, addMonths(first.year, first.month, day, 1)]
    }
    case 'year': {
      const month = anchor?.month ?? 1
      const day = anchor?.day ?? 1
      let first = addMonths(today.year, month, day, 0)
      if (compareDates(first, today) > 0) first = addMonths(today.year - 1, month, day, 0)
      return [first, addMonths(first.year + 1, month, day, 0)]
    }
  }
}

/**
 * An anchor as a caller gives it: a `Date` or epoch ms (its local date in `timeZone` counts, as
 * with a subscription's start) or a `'YYYY-MM-DD'` string. Throws a `ConfigError` naming `field`.
 */
export function parseAnchor(input: unknown, timeZone: string, field: string): CalendarDate {
  if (input instanceof Date || typeof input === 'number') {
    const epoch = input instanceof Date ? input.getTime() : input
    if (!Number.isFinite(epoch)) throw new ConfigError(field, input, 'must be a valid date')
    return dateIn(epoch, timeZone)
  }
  const match = typeof input === 'string' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(input) : null
  if (match !== null) {
    const date = { year: Number(match[1]), month: Number(match[2]), day: Number(match[3]) }
    if (date.month >= 1 && date.month <= 12 && date.day >= 1 && date.day <= daysInMonth(date.year, date.month)) {
      return date
    }
  }
  throw new ConfigError(field, input, 'must be a Date, epoch milliseconds or a "YYYY-MM-DD" date')
}

/** An anchor as a policy holds it: one date for every key, or a function of the key. */
export type AnchorSource = CalendarDate | ((key: string) => Date | number | string) | undefined

/** A policy's calendar period, as validated from its `period`, `timeZone` and `anchor`. */
export interface CalendarRule {
  readonly period: Period
  readonly timeZone: string
  readonly anchor: AnchorSource
  /** The period's usual length, for what needs one number (`RateLimit-Policy`'s `w`). */
  readonly nominalWindow: number
  /** The part of the policy's id that names the calendar. */
  readonly id: string
}

const NOMINAL_MS: Record<Period, number> = { day: DAY_MS, week: 7 * DAY_MS, month: 30 * DAY_MS, year: 365 * DAY_MS }

/**
 * The calendar rule of a policy's options, undefined without `period`; throws a `ConfigError`
 * naming `field.<option>` for a bad period, zone or anchor, or a period with a window or with
 * an algorithm other than fixed-window.
 */
export function calendarRuleOf(options: Record<string, unknown>, field: string): CalendarRule | undefined {
  const { period, timeZone = 'UTC', anchor } = options
  if (period === undefined) {
    for (const option of ['timeZone', 'anchor'] as const) {
      if (options[option] !== undefined) {
        throw new ConfigError(`${field}.${option}`, options[option], 'applies only with `period` (a calendar period)')
      }
    }
    return undefined
  }
  if (!PERIODS.includes(period as Period)) {
    throw new ConfigError(`${field}.period`, period, `must be one of ${PERIODS.join(', ')}`)
  }
  if (options.window !== undefined) {
    throw new ConfigError(
      `${field}.window`,
      options.window,
      'cannot be combined with `period`: a calendar period sets its own bounds (give one or the other)',
    )
  }
  if (options.algorithm !== undefined && options.algorithm !== 'fixed-window') {
    throw new ConfigError(`${field}.algorithm`, options.algorithm, 'must be fixed-window (or absent) with `period`')
  }
  const zone = assertTimeZone(timeZone, `${field}.timeZone`)
  const source: AnchorSource =
    anchor === undefined || typeof anchor === 'function'
      ? (anchor as AnchorSource)
      : parseAnchor(anchor, zone, `${field}.anchor`)
  const fixed =
    source === undefined || typeof source === 'function' ? '' : `:${source.year}-${source.month}-${source.day}`
  return Object.freeze({
    period: period as Period,
    timeZone: zone,
    anchor: source,
    nominalWindow: NOMINAL_MS[period as Period],
    id: `${period}:${zone}${fixed}`,
  })
}

/** The anchor date for `key` under `rule`: its own, the key's (validated), or none. */
export function anchorFor(rule: CalendarRule, key: string): CalendarDate | undefined {
  const { anchor } = rule
  return typeof anchor === 'function' ? parseAnchor(anchor(key), rule.timeZone, 'anchor(key)') : anchor
}
