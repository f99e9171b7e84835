import { type Trace, times } from '../trace.js'

/** The token-bucket traces: one algorithm's rules against the reference (test/parity/token-bucket.test.ts runs them). */
export const TOKEN_BUCKET_TRACES: readonly Trace[] = [
  {
    name: 'token-bucket with a burst below the rate',
    limits: [{ limit: 10, window: 1000, algorithm: 'token-bucket', burst: 4 }],
    steps: [...times(5, [0, 1]), [0, 'peek'], [1, 1], [99, 1], [37, 2], [63, 2], [0, 'peek'], [10_000, 4], [0, 1]],
  },
  {
    name: 'token-bucket shaping with maxDelay',
    limits: [{ limit: 3, window: 1000, algorithm: 'token-bucket', maxDelay: 1000 }],
    steps: [...times(8, [0, 1]), [0, 'peek'], [200, 1], [333, 1], [0, 2], [5000, 'peek']],
  },
  {
    name: "token-bucket warming up: Guava's 10/s over 3 s from cold, idle half of it (still warm), then all of it (cold)",
    limits: [{ limit: 10, window: 1000, algorithm: 'token-bucket', burst: 1, warmup: 3000 }],
    steps: [...times(40, [100, 1]), [0, 'peek'], [1500, 1], ...times(5, [100, 1]), [3000, 1], ...times(5, [100, 1])],
  },
  {
    name: 'token-bucket warming up with a burst, maxDelay, refunds and a penalty',
    limits: [
      { limit: 5, window: 1000, algorithm: 'token-bucket', burst: 4, maxDelay: 500, warmup: 2000, coldFactor: 4 },
    ],
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
