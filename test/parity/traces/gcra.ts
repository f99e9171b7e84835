import { type Trace, times } from '../trace.js'

/** The gcra traces: one algorithm's rules against the reference (test/parity/gcra.test.ts runs them). */
export const GCRA_TRACES: readonly Trace[] = [
  {
    name: 'gcra with a fractional interval',
    limits: [{ limit: 3, window: 1000, algorithm: 'gcra' }],
    steps: [...times(4, [0, 1]), [0, 'peek'], [333, 1], [1, 1], [0, 'peek'], [667, 2], [0, 1], [999, 3], [0, 'peek']],
  },
  {
    name: 'gcra shaping with burst and maxDelay',
    limits: [{ limit: 10, window: 60_000, algorithm: 'gcra', burst: 2, maxDelay: 10_000 }],
    steps: [...times(6, [0, 1]), [0, 'peek'], [1000, 1], [5999, 1], [0, 2], [60_000, 'peek']],
  },
  {
    name: "gcra warming up: Guava's 10/s over 3 s from cold, idle half of it (still warm), then all of it (cold)",
    limits: [{ limit: 10, window: 1000, algorithm: 'gcra', burst: 1, warmup: 3000 }],
    steps: [...times(40, [100, 1]), [0, 'peek'], [1500, 1], ...times(5, [100, 1]), [3000, 1], ...times(5, [100, 1])],
  },
  {
    name: 'gcra warming up with a burst, maxDelay, refunds and a penalty',
    limits: [{ limit: 5, window: 1000, algorithm: 'gcra', burst: 4, maxDelay: 500, warmup: 2000, coldFactor: 4 }],
    steps: [
      [0, 3],
      [0, 2],
      [0, 'peek'],
      [10, { refund: 1 }],
      [0, 1],
      [300, 2],
      [0, { penalty: 2 }],
      ...times(10, [250, 1]),
      [0, 'peek'],
    ],
  },
]
