import { ConfigError } from './errors.js'

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
