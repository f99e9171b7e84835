import { at, periodWindow, refund, type Trace, times } from '../trace.js'

/** The fixed-window traces: one algorithm's rules against the reference (test/parity/fixed-window.test.ts runs them). */
export const FIXED_WINDOW_TRACES: readonly Trace[] = [
  {
    name: 'fixed-window across a boundary',
    limits: [{ limit: 5, window: 1000, algorithm: 'fixed-window' }],
    steps: [...times(6, [0, 1]), [0, 'peek'], [400, 1], [500, 1], [0, 3], [0, 'peek'], [0, 3], [1500, 5], [0, 'peek']],
  },
  {
    // The window opens at the first request (1000.5 s after the aligned boundary would be): the
    // 2nd window starts at the first request after the 1st ended, not at a multiple of 1000.
    name: 'fixed-window from the first request: resets a window after each first request',
    limits: [{ limit: 3, window: 1000, algorithm: 'fixed-window', start: 'first-request' }],
    steps: [
      [0, 'peek'],
      [250, 1],
      [500, 2],
      [0, 1],
      [249, 'peek'],
      [0, 1],
      [1, 'peek'],
      [1, 1],
      [998, refund(1, 500)],
      [0, refund(1, 1500)],
      [0, 1],
      [1, { penalty: 2 }],
      [0, 1],
      [2000, 3],
    ],
  },
  {
    name: 'fixed-window from the first request, blocking, beside a clock-aligned one',
    limits: [
      { limit: 2, window: 700, algorithm: 'fixed-window', start: 'first-request', blockFor: 300 },
      { limit: 4, window: 1000, algorithm: 'fixed-window' },
    ],
    steps: [...times(3, [333, 1]), [200, 1], [100, 1], [700, 1], [0, { block: 500 }], [499, 1], [1, 1], [0, 1]],
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
