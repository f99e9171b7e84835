import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { assertTimeZone, parseAnchor, periodBounds, startOfDay } from './calendar.js'

const iso = (epoch: number) => new Date(epoch).toISOString()
const at = (text: string) => Date.parse(text)
const bounds = (...args: Parameters<typeof periodBounds>) => {
  const { start, end } = periodBounds(...args)
  return [iso(start), iso(end)]
}

describe('calendar periods', () => {
  it('days start at local midnight, and a day across a DST change is 23 or 25 hours long', () => {
    expect(bounds(at('2026-03-29T12:00:00Z'), 'day', 'Europe/Berlin')).toEqual([
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
    ])
    expect(bounds(at('2026-10-25T12:00:00Z'), 'day', 'Europe/Berlin')).toEqual([
      '2026-10-24T22:00:00.000Z',
      '2026-10-25T23:00:00.000Z',
    ])
    expect(bounds(at('2026-03-08T12:00:00Z'), 'day', 'America/New_York')).toEqual([
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
    ])
    expect(bounds(at('2026-11-01T12:00:00Z'), 'day', 'America/New_York')).toEqual([
      '2026-11-01T04:00:00.000Z',
      '2026-11-02T05:00:00.000Z',
    ])
  })

  it('keeps the day an instant before and at local midnight apart', () => {
    expect(bounds(at('2026-03-28T22:59:59.999Z'), 'day', 'Europe/Berlin')[1]).toBe('2026-03-28T23:00:00.000Z')
    expect(bounds(at('2026-03-28T23:00:00Z'), 'day', 'Europe/Berlin')[0]).toBe('2026-03-28T23:00:00.000Z')
  })

  it('serves zones with half-hour and 45-minute offsets and half-hour DST', () => {
    expect(bounds(at('2026-06-15T00:00:00Z'), 'day', 'Asia/Kolkata')).toEqual([
      '2026-06-14T18:30:00.000Z',
      '2026-06-15T18:30:00.000Z',
    ])
    expect(bounds(at('2026-06-15T00:00:00Z'), 'month', 'Asia/Kathmandu')).toEqual([
      '2026-05-31T18:15:00.000Z',
      '2026-06-30T18:15:00.000Z',
    ])
    // Lord Howe moves its clocks by 30 minutes (+10:30 in winter, +11 in summer).
    expect(bounds(at('2026-04-05T12:00:00Z'), 'day', 'Australia/Lord_Howe')).toEqual([
      '2026-04-04T13:00:00.000Z',
      '2026-04-05T13:30:00.000Z',
    ])
  })

  it('starts a day whose midnight the clocks skip when they jump, and one that repeats midnight at the first', () => {
    // Santiago springs forward at 24:00 on 5 Sept 2026: 00:00 does not exist, the day starts at 01:00 (-03).
    expect(iso(startOfDay({ year: 2026, month: 9, day: 6 }, 'America/Santiago'))).toBe('2026-09-06T04:00:00.000Z')
    // It falls back at 24:00 (-03) on 4 April 2026 to 23:00 (-04): 23:00–24:00 repeats, the 5th starts once, at 00:00 -04.
    expect(iso(startOfDay({ year: 2026, month: 4, day: 5 }, 'America/Santiago'))).toBe('2026-04-05T04:00:00.000Z')
    // Berlin's autumn hour repeats 02:00–03:00, not midnight: the day after starts at 00:00 +01.
    expect(iso(startOfDay({ year: 2026, month: 10, day: 26 }, 'Europe/Berlin'))).toBe('2026-10-25T23:00:00.000Z')
  })

  it('months start on the 1st in the zone, across DST, and year ends', () => {
    expect(bounds(at('2026-03-15T00:00:00Z'), 'month', 'Europe/Berlin')).toEqual([
      '2026-02-28T23:00:00.000Z',
      '2026-03-31T22:00:00.000Z',
    ])
    expect(bounds(at('2026-12-31T23:30:00Z'), 'month', 'Europe/Berlin')).toEqual([
      '2026-12-31T23:00:00.000Z',
      '2027-01-31T23:00:00.000Z',
    ])
    expect(bounds(at('2026-12-31T23:30:00Z'), 'month', 'UTC')).toEqual([
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ])
  })

  it('a month anchored on a day it lacks ends on its last day, in leap years and not', () => {
    const jan31 = { year: 2026, month: 1, day: 31 }
    expect(bounds(at('2026-02-10T00:00:00Z'), 'month', 'UTC', jan31)).toEqual([
      '2026-01-31T00:00:00.000Z',
      '2026-02-28T00:00:00.000Z',
    ])
    expect(bounds(at('2026-03-01T00:00:00Z'), 'month', 'UTC', jan31)).toEqual([
      '2026-02-28T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
    ])
    expect(bounds(at('2028-02-28T12:00:00Z'), 'month', 'UTC', jan31)).toEqual([
      '2028-01-31T00:00:00.000Z',
      '2028-02-29T00:00:00.000Z',
    ])
    expect(bounds(at('2026-04-30T12:00:00Z'), 'month', 'UTC', jan31)).toEqual([
      '2026-04-30T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
    ])
    expect(bounds(at('2026-12-20T00:00:00Z'), 'month', 'America/New_York', { year: 2020, month: 5, day: 15 })).toEqual([
      '2026-12-15T05:00:00.000Z',
      '2027-01-15T05:00:00.000Z',
    ])
  })

  it('weeks start on Monday, or on the anchor weekday', () => {
    // 2026-11-26 is a Thursday.
    expect(bounds(at('2026-11-26T12:00:00Z'), 'week', 'UTC')).toEqual([
      '2026-11-23T00:00:00.000Z',
      '2026-11-30T00:00:00.000Z',
    ])
    expect(bounds(at('2026-11-26T12:00:00Z'), 'week', 'UTC', { year: 2026, month: 11, day: 1 })).toEqual([
      '2026-11-22T00:00:00.000Z',
      '2026-11-29T00:00:00.000Z',
    ])
    // A week across Berlin's October change is an hour longer.
    const [start, end] = bounds(at('2026-10-22T12:00:00Z'), 'week', 'Europe/Berlin')
    expect(Date.parse(end as string) - Date.parse(start as string)).toBe(7 * 86_400_000 + 3_600_000)
  })

  it('years start on 1 January, or on the anchor, 29 February being the 28th in other years', () => {
    expect(bounds(at('2026-06-01T00:00:00Z'), 'year', 'Europe/Berlin')).toEqual([
      '2025-12-31T23:00:00.000Z',
      '2026-12-31T23:00:00.000Z',
    ])
    const leapDay = { year: 2024, month: 2, day: 29 }
    expect(bounds(at('2026-06-01T00:00:00Z'), 'year', 'UTC', leapDay)).toEqual([
      '2026-02-28T00:00:00.000Z',
      '2027-02-28T00:00:00.000Z',
    ])
    expect(bounds(at('2027-06-01T00:00:00Z'), 'year', 'UTC', leapDay)).toEqual([
      '2027-02-28T00:00:00.000Z',
      '2028-02-29T00:00:00.000Z',
    ])
  })

  it('every instant of a year lies in exactly one period, and consecutive periods touch', () => {
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe']) {
      for (const period of ['day', 'week', 'month'] as const) {
        let { end } = periodBounds(at('2026-01-01T00:00:00Z'), period, zone, { year: 2026, month: 1, day: 31 })
        while (end < at('2027-01-01T00:00:00Z')) {
          const next = periodBounds(end, period, zone, { year: 2026, month: 1, day: 31 })
          expect(next.start).toBe(end)
          expect(periodBounds(end - 1, period, zone, { year: 2026, month: 1, day: 31 }).end).toBe(end)
          end = next.end
        }
      }
    }
  })

  it('rejects unknown zones and malformed anchors naming the field and the value', () => {
    expect(() => assertTimeZone('Mars/Olympus', 'limits[0].timeZone')).toThrow(ConfigError)
    expect(() => assertTimeZone('Mars/Olympus', 'limits[0].timeZone')).toThrow(/limits\[0\]\.timeZone.*Mars\/Olympus/)
    expect(() => parseAnchor('2026-02-30', 'UTC', 'anchor')).toThrow(/anchor.*2026-02-30/)
    expect(() => parseAnchor(Number.NaN, 'UTC', 'anchor')).toThrow(ConfigError)
    expect(parseAnchor(at('2026-01-31T23:30:00Z'), 'Europe/Berlin', 'anchor')).toEqual({ year: 2026, month: 2, day: 1 })
  })
})
