/**
 * The global count on every window the limit applies to, from Redis's per-sub-window counts of one
 * key: for a fixed window each window itself; for a sliding window the estimate at the end of each
 * sub-window, which is the sum of the last `precision` sub-windows (the oldest one's weight is 0
 * there, and the next sub-window starts from the same sum). So a sliding window is checked at every
 * position a sub-window apart: its start, middle and end alike.
 */
export interface WindowLoad {
  /** When the window ends (ms, Redis time). */
  readonly end: number
  readonly count: number
}

export function windowLoads(byStart: ReadonlyMap<number, number>, span: number, precision: number): WindowLoad[] {
  const starts = [...byStart.keys()]
  if (starts.length === 0) return []
  const first = Math.min(...starts)
  const last = Math.max(...starts)
  const loads: WindowLoad[] = []
  let sum = 0
  for (let start = first; start <= last; start += span) {
    sum += byStart.get(start) ?? 0
    sum -= byStart.get(start - precision * span) ?? 0
    loads.push({ end: start + span, count: sum })
  }
  return loads
}

/** Where a window lies in the run: its first window (a cold fleet), its last, or between. */
export type Phase = 'start' | 'middle' | 'end'

export function phaseOf(load: WindowLoad, runStart: number, runEnd: number, window: number): Phase {
  if (load.end <= runStart + window) return 'start'
  if (load.end > runEnd - window) return 'end'
  return 'middle'
}
