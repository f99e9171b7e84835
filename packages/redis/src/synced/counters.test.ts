import { type Policy, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { Counts, type PolicyCounters, PolicyShape, type SubWindow } from './counters.js'
import { CHUNK } from './slab.js'

const policy = parsePolicies([{ limit: 100, window: '1m' }]).policies[0] as Policy

/** A sub-window where this node admitted 40 and a reply reported 100 in all (60 of the others'). */
function heardOf100(): SubWindow {
  const w = new Counts().make(new PolicyShape(policy.id, policy, () => 'k'), 'k', policy.limit).at(0)
  w.count(40)
  w.acknowledge(40, 0, 0, false)
  w.heard(100, 40, false, 100, 100)
  return w
}

describe('SubWindow: the others’ counts across a Redis that lost its keys', () => {
  it('a reply with less of the others than was held keeps the held count in the estimate', () => {
    const w = heardOf100()
    w.holdOthers()
    // Redis restarted empty; this node's resend landed, the other nodes' not yet.
    w.heard(40, 40, false, 200, 100)
    expect(w.estimate).toBe(100)
    w.count(5)
    expect(w.estimate).toBe(105)
  })

  it('the first reply holding at least the held count ends the hold: later counts are Redis’s again', () => {
    const w = heardOf100()
    w.holdOthers()
    w.heard(110, 40, false, 200, 100)
    expect(w.estimate).toBe(110)
    // The others refund 30 after the hold ended: the estimate follows Redis down.
    w.heard(80, 40, false, 300, 100)
    expect(w.estimate).toBe(80)
  })

  it('without a hold, a lower count from Redis is taken as it is (the others refunded)', () => {
    const w = heardOf100()
    w.heard(70, 40, false, 200, 100)
    expect(w.estimate).toBe(70)
  })

  it('a reset ends the hold: the count starts again from 0', () => {
    const w = heardOf100()
    w.holdOthers()
    w.reset()
    w.heard(40, 40, false, 200, 100)
    expect(w.estimate).toBe(40)
  })
})

describe('handles kept across an await (a call in flight)', () => {
  it('a sub-window of a key forgotten meanwhile is stale and writes nothing, even once its chunk was given back', () => {
    const counts = new Counts()
    const shape = new PolicyShape(policy.id, policy, () => 'k')
    // Two chunks of keys, each with one sub-window: forgetting them all gives the second chunk back.
    const all = Array.from({ length: 2 * CHUNK }, (_, i) => counts.make(shape, `k${i}`, policy.limit))
    for (const counters of all) counters.at(0).count(1)
    const inFlight = (all[2 * CHUNK - 1] as PolicyCounters).at(0)
    for (const counters of all) counts.forget(counters)
    expect(counts.windows.chunks).toBe(1)
    expect(inFlight.stale).toBe(true)
    // The reply lands: nothing throws, nothing is written.
    inFlight.acknowledge(1, 0, 0, true)
    inFlight.heard(50, 1, true, 100, 100)
    inFlight.countExact(1)
    inFlight.deny(true)
    // A key made now takes a freed row; the late reply above left it at 0.
    const fresh = counts.make(shape, 'new', policy.limit).at(0)
    expect([fresh.global, fresh.sentAdmitted, fresh.deniedAnywhere]).toEqual([0, 0, false])
  })
})

describe('PolicyCounters.stateAt: a sliding window’s counts, oldest first', () => {
  const sliding = parsePolicies([{ limit: 100, window: 1000, algorithm: 'sliding-window', precision: 4 }])
    .policies[0] as Policy
  const span = 250
  const now = 1_800_000_000_100

  function countersWith(counted: readonly [at: number, cost: number][]): PolicyCounters {
    const counters = new Counts().make(new PolicyShape(sliding.id, sliding, () => 'k'), 'k', sliding.limit)
    for (const [at, cost] of counted) counters.count(at, cost)
    return counters
  }

  it('puts each sub-window’s count at its place, 0 where none was kept, and leaves out those the window passed', () => {
    const counters = countersWith([
      [now - 5 * span, 9],
      [now - 4 * span, 7],
      [now - 3 * span, 1],
      [now - span, 2],
      [now, 3],
    ])
    const start = counters.currentStart(now)
    expect(counters.stateAt(now)).toEqual({ start, counts: [7, 1, 0, 2, 3] })
    expect(counters.stateAt(now + span)).toEqual({ start: start + span, counts: [1, 0, 2, 3, 0] })
  })

  it('a clock stepped back within the window reads the counts where they are; farther back, none', () => {
    const counters = countersWith([
      [now - span, 2],
      [now, 3],
    ])
    const start = counters.currentStart(now)
    expect(counters.stateAt(now - 2 * span)).toEqual({ start, counts: [0, 0, 0, 2, 3] })
    expect(counters.stateAt(now - 5 * span)).toEqual({ start: start - 5 * span, counts: [0, 0, 0, 0, 0] })
  })
})

describe('PolicyCounters.unseen: what the other nodes probably added unheard', () => {
  const fixed = parsePolicies([{ limit: 100, window: '1m', algorithm: 'fixed-window' }]).policies[0] as Policy
  const shape = new PolicyShape(fixed.id, fixed, () => 'k')
  /** A key asked `count` times here, evenly from `from` to `to` (window time; its window is [0, 60 000)). */
  const askedFrom = (from: number, to: number, count: number): PolicyCounters => {
    const counters = new Counts().make(shape, 'k', fixed.limit)
    for (let i = 0; i < count; i++) counters.ask(from + ((to - from) * i) / (count - 1), 1)
    return counters
  }

  it('projects this node’s rate from the key’s first request here, not from the window’s start', () => {
    // 30 asked over the last 2 s of 50, heard just now: 15 a second over 2 intervals, not 0.6 (30 ÷ 50 s).
    const busyLately = askedFrom(48_000, 50_000, 30)
    busyLately.at(0).heard(30, 0, false, 50_000, 100)
    expect(busyLately.unseen(50_000, 2, 100, 0)).toBeCloseTo(15 * 0.2, 1)
    // Never heard: the others added about what this node was asked since its first request (2 s), not over the window's 50 s.
    expect(askedFrom(48_000, 50_000, 30).unseen(50_000, 2, 100, 0)).toBeCloseTo(15 * (0.1 + 2), 1)
  })

  it('a key asked once, on a machine whose timers run 2 s late, projects about one request, not one an interval', () => {
    const once = new Counts().make(shape, 'k', fixed.limit)
    once.ask(50_000, 1)
    // One over 2.1 s (the interval and the lag), over the interval and the lag and an interval.
    expect(once.unseen(50_000, 2, 100, 2000)).toBeCloseTo(2.2 / 2.1, 2)
  })
})
