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
]
