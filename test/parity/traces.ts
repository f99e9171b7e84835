import type { PolicyInput, PolicyOptions } from '@sluice/core'

/** Give back `refund` units (admitted `ago` ms before now, when given), then peek to show the effect. */
export interface RefundAction {
  readonly refund: number
  readonly ago?: number
}

/** Take `penalty` units whatever the limits, then peek to show the effect. */
export interface PenaltyAction {
  readonly penalty: number
}

/** Block the key for `block` ms in the blockFor policies, then peek to show the effect. */
export interface BlockAction {
  readonly block: number
}

/**
 * A trace's policy: as a limiter takes it, or a fixed window whose windows start `offset` ms after
 * a multiple of `window` since the epoch: what the limiter resolves a calendar period into (no
 * limiter option sets an offset), so every store is driven on calendar windows directly.
 */
export type TracePolicy = PolicyInput | OffsetWindow

/** A fixed window starting at `offset` (0 ≤ offset < window), its id naming the offset as a period's names its start. */
export interface OffsetWindow extends PolicyOptions {
  readonly algorithm: 'fixed-window'
  readonly window: number
  readonly offset: number
}

/** Go on with these limits (a plan change: named policies keep their state), then peek under them. */
export interface PlanAction {
  readonly plan: readonly TracePolicy[]
}

/** Advance the clock by `advance` ms, then consume `cost` units, peek, refund, take a penalty, block or change plan. */
export type TraceStep = readonly [
  advance: number,
  action: number | 'peek' | RefundAction | PenaltyAction | BlockAction | PlanAction,
]

export interface Trace {
  readonly name: string
  readonly limits: readonly TracePolicy[]
  readonly steps: readonly TraceStep[]
}

/** Not aligned to any window, so the first window is already partly gone. */
export const TRACE_START = 1_700_000_000_123

const HOUR = 3_600_000

/** Steps at these times (epoch ms, from `TRACE_START` on), as the advances a trace is written in. */
function at(...steps: (readonly [time: number, action: TraceStep[1]])[]): TraceStep[] {
  let now = TRACE_START
  return steps.map(([time, action]) => {
    const advance = time - now
    now = time
    return [advance, action]
  })
}

/** The fixed window the limiter resolves the period from `start` to `end` into. */
function periodWindow(start: number, end: number, options: { limit: number; name?: string }): OffsetWindow {
  const window = end - start
  return { algorithm: 'fixed-window', window, offset: start % window, ...options }
}

/** A calendar month (UTC) as the limiter resolves it; `month` from 0 as `Date.UTC` counts. */
const monthOf = (year: number, month: number, options: { limit: number; name?: string }) =>
  periodWindow(Date.UTC(year, month, 1), Date.UTC(year, month + 1, 1), options)

const times = (n: number, step: TraceStep): TraceStep[] => Array.from({ length: n }, () => step)
const refund = (units: number, ago?: number): RefundAction =>
  ago === undefined ? { refund: units } : { refund: units, ago }

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
    // Logs longer than one read of the Redis log (16 entries): its binary searches, the move of
    // live entries down once half have left, refunds that rewrite the entries after theirs.
    name: 'sliding-log, a long log: entries leaving in bulk, deep denials, refunds mid-log',
    limits: [{ limit: 300, window: 2000, algorithm: 'sliding-log' }],
    steps: [
      ...times(300, [3, 1]),
      [0, 'peek'],
      [0, 1],
      [0, { penalty: 40 }],
      [0, 5],
      [1, 2],
      [1200, 1],
      [0, refund(3, 1500)],
      [0, refund(2, 1190)],
      [0, refund(50)],
      [0, 'peek'],
      [1000, 'peek'],
      [0, 2],
      ...times(900, [5, 1]),
      [0, refund(1, 7)],
      [0, refund(400)],
      [0, 'peek'],
      ...times(40, [1, 3]),
      [2001, 'peek'],
    ],
  },
  {
    name: 'sliding-log, a long log with blockFor: a deep denial blocks, a block and penalty keep the log',
    limits: [{ limit: 60, window: 1000, algorithm: 'sliding-log', blockFor: 700 }],
    steps: [
      ...times(60, [7, 1]),
      [0, 1],
      [0, 'peek'],
      [701, 1],
      [0, { block: 300 }],
      [0, { penalty: 25 }],
      [300, 'peek'],
      [0, 1],
      [450, 1],
      ...times(60, [9, 1]),
      [0, refund(30)],
      [1000, 'peek'],
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
