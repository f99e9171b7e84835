import { type Trace, times } from '../trace.js'

/** The sliding-window traces: one algorithm's rules against the reference (test/parity/sliding-window.test.ts runs them). */
export const SLIDING_WINDOW_TRACES: readonly Trace[] = [
  {
    name: 'sliding-window, two counters',
    limits: [{ limit: 10, window: 1000, precision: 1 }],
    steps: [...times(11, [30, 1]), [0, 'peek'], ...times(8, [150, 1]), [0, 4], [200, 2], [0, 'peek'], [2500, 'peek']],
  },
  {
    name: 'sliding-window, the default ten sub-windows',
    limits: ['10/s'],
    steps: [...times(11, [30, 1]), [0, 'peek'], ...times(8, [150, 1]), [0, 4], [200, 2], [0, 'peek'], [2500, 'peek']],
  },
  {
    name: 'sliding-window, precision 4',
    limits: [{ limit: 8, window: 2000, precision: 4 }],
    steps: [
      [0, 3],
      [300, 3],
      [300, 2],
      [0, 1],
      [0, 'peek'],
      [100, 1],
      ...times(6, [250, 1]),
      [0, 'peek'],
      [10, 5],
      [1700, 4],
      [5000, 'peek'],
    ],
  },
  {
    name: 'an hour-long sliding window with a large limit',
    limits: ['5000/1h'],
    steps: [
      [0, 2500],
      [0, 2500],
      [0, 1],
      [0, 'peek'],
      [1_800_000, 1],
      [900_000, 1000],
      [0, 'peek'],
      [3_600_000, 'peek'],
    ],
  },
]
