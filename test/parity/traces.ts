import type { PolicyInput } from '@sluice/core'
import { at, HOUR, monthOf, refund, TRACE_START, type Trace, times } from './trace.js'
import { FIXED_WINDOW_TRACES } from './traces/fixed-window.js'
import { GCRA_TRACES } from './traces/gcra.js'
import { SLIDING_LOG_TRACES } from './traces/sliding-log.js'
import { SLIDING_WINDOW_TRACES } from './traces/sliding-window.js'
import { TOKEN_BUCKET_TRACES } from './traces/token-bucket.js'

export * from './trace.js'

/** Traces of sets of several algorithms, and of one rule in every algorithm (test/parity/sets.test.ts and each algorithm's test run them). */
const SETS_TRACES: readonly Trace[] = [
  {
    name: 'composition: a denial in one policy writes nothing in the other',
    limits: [
      { limit: 10, window: 1000, algorithm: 'fixed-window' },
      { limit: 3, window: 1000, algorithm: 'gcra' },
    ],
    steps: [...times(5, [0, 1]), [0, 'peek'], [340, 1], [0, 'peek'], ...times(4, [100, 1]), [0, 'peek']],
  },
  {
    name: 'composition of all five algorithms',
    limits: [
      { limit: 6, window: 1000, algorithm: 'fixed-window' },
      { limit: 7, window: 3000, precision: 3 },
      { limit: 8, window: 2000, algorithm: 'sliding-log' },
      { limit: 5, window: 1000, algorithm: 'token-bucket', burst: 3 },
      { limit: 4, window: 1000, algorithm: 'gcra', burst: 3 },
    ],
    steps: [...times(5, [0, 1]), [0, 'peek'], ...times(10, [170, 1]), [0, 2], [0, 'peek'], [4000, 3], [0, 'peek']],
  },
  {
    name: 'millisecond windows',
    limits: [
      { limit: 2, window: 10, algorithm: 'fixed-window' },
      { limit: 1, window: 7, algorithm: 'gcra' },
    ],
    steps: [
      [0, 1],
      [0, 1],
      [3, 1],
      [4, 1],
      [0, 'peek'],
      [7, 1],
      [1, 'peek'],
      [20, 1],
    ],
  },
  {
    name: 'refunds in every algorithm: same instant, later, a passed window, more than was taken',
    limits: [
      { limit: 6, window: 1000, algorithm: 'fixed-window' },
      { limit: 7, window: 3000, precision: 3 },
      { limit: 8, window: 2000, algorithm: 'sliding-log' },
      { limit: 5, window: 1000, algorithm: 'token-bucket', burst: 3 },
      { limit: 4, window: 1000, algorithm: 'gcra', burst: 3 },
    ],
    steps: [
      [0, refund(1)],
      [0, 2],
      [0, refund(2)],
      ...times(3, [0, 1]),
      [0, 1],
      [120, refund(1)],
      [0, 1],
      [300, 2],
      [0, refund(3)],
      [900, refund(1)],
      [0, 1],
      [2500, refund(2)],
      [0, 3],
    ],
  },
  {
    name: 'late refunds give back only into the window of their admission',
    limits: [
      { limit: 6, window: 1000, algorithm: 'fixed-window' },
      { limit: 7, window: 3000, precision: 3 },
      { limit: 8, window: 2000, algorithm: 'sliding-log' },
      { limit: 5, window: 1000, algorithm: 'token-bucket', burst: 3 },
      { limit: 4, window: 1000, algorithm: 'gcra', burst: 3 },
    ],
    steps: [
      [0, 2],
      [700, 1],
      [400, 1],
      [0, refund(2, 1100)],
      [0, refund(1, 400)],
      [0, refund(1, 0)],
      [0, 1],
      [1000, 1],
      [900, refund(1, 2900)],
      [0, refund(1, 900)],
      [0, refund(1, 12345)],
    ],
  },
  {
    name: 'blockFor in every algorithm: a denial blocks, a block outlasts the window, refunds keep it',
    limits: [
      { limit: 3, window: 1000, algorithm: 'fixed-window', blockFor: 5000 },
      { limit: 4, window: 1000, precision: 2, blockFor: 3000 },
      { limit: 5, window: 1000, algorithm: 'sliding-log', blockFor: 2500 },
      { limit: 6, window: 1000, algorithm: 'token-bucket', burst: 3, blockFor: 1500 },
      { limit: 7, window: 1000, algorithm: 'gcra', burst: 3, maxDelay: 200, blockFor: 1200 },
    ],
    steps: [
      ...times(4, [0, 1]),
      [0, 'peek'],
      [300, 1],
      [0, refund(1)],
      [1000, 'peek'],
      [1000, 1],
      [3100, 1],
      [0, 2],
      [0, 3],
      [5000, 1],
      [0, 'peek'],
    ],
  },
  {
    name: 'blockFor on one policy: another policy denying does not block it',
    limits: [
      { limit: 5, window: 1000, algorithm: 'fixed-window', blockFor: 10_000, name: 'guarded' },
      { limit: 2, window: 100, algorithm: 'fixed-window', name: 'burst' },
    ],
    steps: [...times(3, [0, 1]), [100, 1], [0, 1], [100, 1], [0, 1], [0, 1], [500, 1], [9500, 'peek'], [500, 1]],
  },
  {
    name: 'penalties past the limit in every algorithm, with and without blockFor',
    limits: [
      { limit: 3, window: 1000, algorithm: 'fixed-window' },
      { limit: 4, window: 1000, precision: 2 },
      { limit: 5, window: 1000, algorithm: 'sliding-log', blockFor: 2500 },
      { limit: 6, window: 1000, algorithm: 'token-bucket', burst: 3 },
      { limit: 7, window: 1000, algorithm: 'gcra', burst: 3, blockFor: 1200 },
    ],
    steps: [
      [0, { penalty: 2 }],
      [0, 1],
      [10, { penalty: 9 }],
      [0, 1],
      [700, 'peek'],
      [900, 1],
      [1000, { penalty: 1 }],
      [0, 1],
      [3000, 1],
      [0, { penalty: 20 }],
      [5000, 'peek'],
    ],
  },
  {
    name: 'block(): only the blockFor policies, a longer block stays, the counts are kept',
    limits: [
      { limit: 3, window: 1000, algorithm: 'fixed-window', blockFor: 2000 },
      { limit: 4, window: 1000, algorithm: 'gcra', burst: 2, blockFor: 500 },
      { limit: 5, window: 1000, algorithm: 'sliding-log' },
    ],
    steps: [
      [0, 1],
      [0, { block: 1500 }],
      [100, 1],
      [0, { block: 200 }],
      [1500, 1],
      [0, 1],
      [0, 1],
      [0, 1],
      [0, { block: 10_000 }],
      [9000, 'peek'],
      [1000, 1],
    ],
  },
  {
    name: 'refunds while shaping with maxDelay',
    limits: [
      { limit: 3, window: 1000, algorithm: 'token-bucket', maxDelay: 1000 },
      { limit: 3, window: 1000, algorithm: 'gcra', maxDelay: 1000, name: 'gcra' },
    ],
    steps: [...times(5, [0, 1]), [0, refund(2)], [0, 1], [250, refund(3)], [0, 3], [0, 1]],
  },
  ...(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const).map((algorithm): Trace => {
    const plan = (limit: number, extra: object = {}): PolicyInput[] => [
      { name: 'plan', limit, window: 10_000, algorithm, ...extra },
    ]
    return {
      name: `${algorithm}, a named policy across plan changes (up, down, up again)`,
      limits: plan(10),
      steps: [
        [0, 7],
        [500, 3],
        [0, 1],
        [100, { plan: plan(100) }],
        [0, 50],
        [300, refund(5, 300)],
        [0, { penalty: 4 }],
        [200, { plan: plan(10) }],
        [0, 1],
        [3000, 'peek'],
        [0, { plan: plan(40) }],
        [0, 2],
        [4000, 1],
        [7000, 'peek'],
      ],
    }
  }),
  {
    // Each month is a window of its own length starting on its 1st; the limiter moves a named
    // quota to the next month's window at the boundary, a new state (its id names the start).
    name: 'fixed-window at an offset: calendar months of 30 and 31 days, a named quota changing plan mid-month',
    limits: [monthOf(2023, 10, { name: 'monthly', limit: 5 }), { limit: 3, window: 1000, algorithm: 'fixed-window' }],
    steps: at(
      [TRACE_START, 2],
      [Date.UTC(2023, 10, 30, 23, 59, 59, 999), 3],
      [Date.UTC(2023, 10, 30, 23, 59, 59, 999), 1],
      [Date.UTC(2023, 10, 30, 23, 59, 59, 999), refund(1, 1000)],
      [Date.UTC(2023, 11, 1), 'peek'],
      [Date.UTC(2023, 11, 1), { plan: [monthOf(2023, 11, { name: 'monthly', limit: 5 }), '3/s'] }],
      [Date.UTC(2023, 11, 1), 3],
      [Date.UTC(2023, 11, 1, 0, 0, 0, 500), 2],
      [Date.UTC(2023, 11, 10), { plan: [monthOf(2023, 11, { name: 'monthly', limit: 10 }), '3/s'] }],
      [Date.UTC(2023, 11, 10), 3],
      // Admitted in November: nothing comes back into December.
      [Date.UTC(2023, 11, 10), refund(1, 10 * 24 * HOUR)],
      // 30 days after 1 December: a 30-day window would turn here, December's 31 days do not.
      [Date.UTC(2023, 11, 30, 23, 59, 59, 999), 'peek'],
      [Date.UTC(2023, 11, 31), 'peek'],
      [Date.UTC(2023, 11, 31), 2],
      [Date.UTC(2023, 11, 31, 23, 59, 59, 999), { penalty: 4 }],
      [Date.UTC(2024, 0, 1), 'peek'],
      [Date.UTC(2024, 0, 1), { plan: [monthOf(2024, 0, { name: 'monthly', limit: 10 }), '3/s'] }],
      [Date.UTC(2024, 0, 31, 23, 59, 59, 999), 3],
    ),
  },
  ...(['token-bucket', 'gcra'] as const).map(
    (algorithm): Trace => ({
      name: `${algorithm}, a named policy whose burst and shaping change`,
      limits: [{ name: 'api', limit: 10, window: 1000, algorithm, burst: 4 }],
      steps: [
        [0, 4],
        [50, { plan: [{ name: 'api', limit: 10, window: 1000, algorithm, burst: 20, maxDelay: 500 }] }],
        [0, 18],
        [0, 3],
        [30, { plan: [{ name: 'api', limit: 3, window: 1000, algorithm, burst: 2 }] }],
        [0, 1],
        [700, 1],
        [0, refund(1)],
        [2000, 'peek'],
      ],
    }),
  ),
]

/**
 * Shared by every store: the memory store is the reference and each other store must give the
 * same outcome, field for field, at every step. In the order they were written: test/redis runs
 * them one after the other on one key of a fresh Cluster, where the order decides which script a
 * shard loads first (NOSCRIPT).
 */
export const traces: readonly Trace[] = [
  ...FIXED_WINDOW_TRACES.slice(0, 1),
  ...SLIDING_WINDOW_TRACES.slice(0, 3),
  ...SLIDING_LOG_TRACES.slice(0, 1),
  ...TOKEN_BUCKET_TRACES,
  ...GCRA_TRACES,
  ...SETS_TRACES.slice(0, 3),
  ...SLIDING_WINDOW_TRACES.slice(3),
  ...SETS_TRACES.slice(3, 4),
  ...SLIDING_LOG_TRACES.slice(1),
  ...SETS_TRACES.slice(4, -2),
  ...FIXED_WINDOW_TRACES.slice(1),
  ...SETS_TRACES.slice(-2),
]
