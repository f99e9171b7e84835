import { type Policy, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { Counts, PolicyShape, type SubWindow } from './counters.js'

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
