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

export const HOUR = 3_600_000

/** Steps at these times (epoch ms, from `TRACE_START` on), as the advances a trace is written in. */
export function at(...steps: (readonly [time: number, action: TraceStep[1]])[]): TraceStep[] {
  let now = TRACE_START
  return steps.map(([time, action]) => {
    const advance = time - now
    now = time
    return [advance, action]
  })
}

/** The fixed window the limiter resolves the period from `start` to `end` into. */
export function periodWindow(start: number, end: number, options: { limit: number; name?: string }): OffsetWindow {
  const window = end - start
  return { algorithm: 'fixed-window', window, offset: start % window, ...options }
}

/** A calendar month (UTC) as the limiter resolves it; `month` from 0 as `Date.UTC` counts. */
export const monthOf = (year: number, month: number, options: { limit: number; name?: string }) =>
  periodWindow(Date.UTC(year, month, 1), Date.UTC(year, month + 1, 1), options)

export const times = (n: number, step: TraceStep): TraceStep[] => Array.from({ length: n }, () => step)
export const refund = (units: number, ago?: number): RefundAction =>
  ago === undefined ? { refund: units } : { refund: units, ago }
