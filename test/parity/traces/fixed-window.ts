import { at, periodWindow, type Trace, times } from '../trace.js'

/** The fixed-window traces: one algorithm's rules against the reference (test/parity/fixed-window.test.ts runs them). */
export const FIXED_WINDOW_TRACES: readonly Trace[] = [
  {
    name: 'fixed-window across a boundary',
    limits: [{ limit: 5, window: 1000, algorithm: 'fixed-window' }],
    steps: [...times(6, [0, 1]), [0, 'peek'], [400, 1], [500, 1], [0, 3], [0, 'peek'], [0, 3], [1500, 5], [0, 'peek']],
  },
  {
    // Days in Europe/Berlin: 31 March 2024 has 23 hours (from 23:00 UTC the day before), 27
    // October 2024 has 25 (from 22:00 UTC), the days around them 24.
    name: 'fixed-window at an offset: days of 23 and 25 hours (daylight saving), an unnamed quota',
    limits: [periodWindow(Date.UTC(2024, 2, 30, 23), Date.UTC(2024, 2, 31, 22), { limit: 4 })],
    steps: at(
      [Date.UTC(2024, 2, 30, 23), 'peek'],
      [Date.UTC(2024, 2, 31, 12), 3],
      [Date.UTC(2024, 2, 31, 21, 59, 59, 999), 2],
      [Date.UTC(2024, 2, 31, 21, 59, 59, 999), 1],
      [Date.UTC(2024, 2, 31, 22), 'peek'],
      [
        Date.UTC(2024, 2, 31, 22),
        { plan: [periodWindow(Date.UTC(2024, 2, 31, 22), Date.UTC(2024, 3, 1, 22), { limit: 4 })] },
      ],
      [Date.UTC(2024, 2, 31, 22, 30), 4],
      [
        Date.UTC(2024, 9, 26, 22),
        { plan: [periodWindow(Date.UTC(2024, 9, 26, 22), Date.UTC(2024, 9, 27, 23), { limit: 4 })] },
      ],
      [Date.UTC(2024, 9, 26, 22), 4],
      // 24 hours in: a 24-hour day would have turned, this one has an hour to go.
      [Date.UTC(2024, 9, 27, 22), 1],
      [Date.UTC(2024, 9, 27, 22, 59, 59, 999), { penalty: 2 }],
      [Date.UTC(2024, 9, 27, 23), 'peek'],
      [Date.UTC(2024, 9, 27, 23), 1],
    ),
  },
]
