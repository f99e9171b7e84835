import type { PolicyInput } from '@sluice/core'

/** Give back `refund` units, then peek to show the effect. */
export interface RefundAction {
  readonly refund: number
}

/** Advance the clock by `advance` ms, then consume `cost` units, peek, or refund. */
export type TraceStep = readonly [advance: number, action: number | 'peek' | RefundAction]

export interface Trace {
  readonly name: string
  readonly limits: readonly PolicyInput[]
  readonly steps: readonly TraceStep[]
}

/** Not aligned to any window, so the first window is already partly gone. */
export const TRACE_START = 1_700_000_000_123

const times = (n: number, step: TraceStep): TraceStep[] => Array.from({ length: n }, () => step)
const refund = (units: number): RefundAction => ({ refund: units })

/**
 * Shared by every store: the memory store is the reference and each other store must give the
 * same outcome, field for field, at every step.
 */
export const traces: readonly Trace[] = [
  {
    name: 'fixed-window across a boundary',
    limits: [{ limit: 5, window: 1000, algorithm: 'fixed-window' }],
    steps: [...times(6, [0, 1]), [0, 'peek'], [400, 1], [500, 1], [0, 3], [0, 'peek'], [0, 3], [1500, 5], [0, 'peek']],
  },
  {
    name: 'sliding-window, two counters',
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
    name: 'sliding-log with costs and same-millisecond merges',
    limits: [{ limit: 5, window: 1000, algorithm: 'sliding-log' }],
    steps: [
      [0, 2],
      [0, 1],
      [100, 1],
      [0, 'peek'],
      [0, 2],
      [50, 1],
      [850, 1],
      [0, 2],
      [100, 3],
      [0, 'peek'],
      [2000, 5],
    ],
  },
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
    name: 'sliding-log refunds split a same-millisecond entry and skip expired ones',
    limits: [{ limit: 5, window: 1000, algorithm: 'sliding-log' }],
    steps: [
      [0, 2],
      [0, 2],
      [500, 1],
      [0, refund(2)],
      [0, 3],
      [600, refund(4)],
      [0, 'peek'],
      [0, 5],
      [1000, refund(5)],
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
]
