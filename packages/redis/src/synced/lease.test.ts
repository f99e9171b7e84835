import { parsePolicies, parsePolicy } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import {
  allocationOf,
  DEFAULT_LEASE_SIZING,
  Demand,
  grantTarget,
  IDLE_SYNCS,
  Lease,
  leasable,
  maxHeld,
} from './lease.js'

const T = 1_700_000_000_000
const bucket = parsePolicy({ limit: 1000, window: 1000, algorithm: 'token-bucket' })

describe('grant sizing', () => {
  it('follows the node’s rate over two intervals, at most the bound, none at rate 0', () => {
    // 0.05 units per ms over 2 × 100 ms.
    expect(grantTarget(0.05, 100, 100)).toBe(10)
    expect(grantTarget(0.0001, 100, 100)).toBe(1)
    expect(grantTarget(0, 100, 100)).toBe(0)
    expect(grantTarget(5, 100, 100)).toBe(100)
  })

  it('a node holds at most its part of the fleet’s cap: N nodes together never more than the cap', () => {
    const sizing = { allocation: 0, cap: 0.2 }
    expect(maxHeld(bucket, sizing, 1)).toBe(200)
    for (const nodes of [2, 4, 8]) expect(nodes * maxHeld(bucket, sizing, 1 / nodes)).toBeLessThanOrEqual(200)
    expect(maxHeld(bucket, sizing, 0.9)).toBe(180) // by weight
    expect(maxHeld(bucket, DEFAULT_LEASE_SIZING, 1 / 8)).toBe(12)
    // Under one unit: nothing held, the key goes per request (no rounding up past the cap).
    expect(maxHeld(parsePolicy({ limit: 5, window: 1000, algorithm: 'gcra' }), DEFAULT_LEASE_SIZING, 1)).toBe(0)
  })

  it('the allocation: a node’s part of a share of the burst, evenly or by weight, never beyond its part of the cap', () => {
    expect(allocationOf(bucket, { allocation: 0.5, cap: 0.5 }, 1 / 4)).toBe(125)
    expect(allocationOf(bucket, { allocation: 0.5, cap: 0.5 }, 0.9)).toBe(450)
    expect(allocationOf(bucket, { allocation: 0.5, cap: 0.5 }, 0.1)).toBe(50)
    expect(allocationOf(bucket, DEFAULT_LEASE_SIZING, 1)).toBe(0)
  })

  it('Demand: the rate of the last interval, then averaged with each next one; idle syncs counted', () => {
    let now = T
    const demand = new Demand(now)
    demand.asked = 20
    now += 100
    demand.rollover(now)
    expect(demand.rate).toBeCloseTo(0.2)
    demand.asked = 0
    now += 100
    demand.rollover(now)
    expect(demand.rate).toBeCloseTo(0.1)
    expect(demand.idle).toBe(1)
    demand.asked = 40
    now += 200
    demand.rollover(now)
    expect(demand.rate).toBeCloseTo(0.15)
    expect(demand.idle).toBe(0)
    for (let i = 0; i < IDLE_SYNCS; i++) {
      now += 100
      demand.rollover(now)
    }
    expect(demand.idle).toBe(IDLE_SYNCS)
  })

  it('Demand.clear: a lease whose state another set took over asks for nothing at the next sync', () => {
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'token-bucket' })
    let now = T
    const lease = new Lease(['k'], 0, set, now)
    lease.demand.asked = 10
    now += 100
    lease.demand.rollover(now)
    lease.demand.asked = 5
    lease.held[0] = 20
    lease.demand.clear()
    now += 100
    lease.demand.rollover(now)
    expect(lease.adjustments(100, [100])).toEqual([-20])
  })

  it('a lease tops up to its target, gives back what is beyond twice the target', () => {
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'token-bucket' })
    let now = T
    const lease = new Lease(['k'], 0, set, now)
    lease.demand.asked = 10
    now += 100
    lease.demand.rollover(now)
    expect(lease.adjustments(100, [100])).toEqual([20]) // 0.1 per ms over 200 ms
    lease.held[0] = 20
    expect(lease.adjustments(100, [100])).toEqual([0])
    lease.held[0] = 45
    expect(lease.adjustments(100, [100])).toEqual([-25])
    lease.demand.rate = 0
    expect(lease.adjustments(100, [100])).toEqual([-45])
  })

  it('a lease above its bound (more live nodes, a smaller part of the cap) gives the excess back at once', () => {
    const set = parsePolicies({ limit: 1000, window: 1000, algorithm: 'token-bucket' })
    let now = T
    const lease = new Lease(['k'], 0, set, now)
    lease.demand.asked = 100
    now += 100
    lease.demand.rollover(now)
    lease.held[0] = 100
    expect(lease.adjustments(100, [100])).toEqual([0])
    expect(lease.adjustments(100, [50])).toEqual([-50])
  })

  it('spends only when every policy holds the cost; outcomes read Redis’s state with the grant put back', () => {
    const set = parsePolicies([
      { limit: 10, window: 1000, algorithm: 'token-bucket' },
      { limit: 100, window: 60_000, algorithm: 'gcra' },
    ])
    const now = T
    const lease = new Lease(['a', 'b'], 0, set, now)
    lease.held[0] = 3
    lease.held[1] = 1
    // Redis after the grants: the bucket had 10 tokens and gave 3 (a token is `window` units);
    // the GCRA schedule was empty and gave 1 (600 ms a unit).
    lease.seen[0] = { tokensOrTat: 7 * 1000, updated: now }
    lease.seen[1] = { tokensOrTat: now + 600, updated: 0 }
    const first = lease.spend(now, 1)
    expect(first?.map((o) => [o.allowed, o.remaining])).toEqual([
      [true, 9],
      [true, 99],
    ])
    expect(lease.held).toEqual([2, 0])
    expect(lease.spend(now, 1)).toBeUndefined() // the GCRA holds nothing: not a denial, a take
    expect(lease.held).toEqual([2, 0])
  })

  it('alone (Redis unreachable): spends what is held, then this node’s share of what the bucket held when last heard, refilled at the share’s rate; what it admits is owed as a charge', () => {
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'token-bucket' })
    const quarter = parsePolicies({ limit: 25, window: 1000, algorithm: 'token-bucket', burst: 25 })
    let now = T
    const lease = new Lease(['k'], 0, set, now)
    lease.held[0] = 2
    // Redis showed 40 tokens left (a token is `window` units).
    lease.seen[0] = { tokensOrTat: 40 * 1000, updated: now }
    let admitted = 0
    for (let i = 0; i < 30; i++) if (lease.spendAlone(now, quarter, 1).every((o) => o.allowed)) admitted++
    // 2 held, then a quarter of the 40: not a fresh share of 25.
    expect(admitted).toBe(2 + 10)
    expect(lease.charge).toEqual([10])
    expect(lease.owes()).toBe(true)
    now += 400 // 40 units drip into the whole bucket: 10 into this share
    admitted = 0
    for (let i = 0; i < 30; i++) if (lease.spendAlone(now, quarter, 1).every((o) => o.allowed)) admitted++
    expect(admitted).toBe(10)
    expect(lease.charge).toEqual([20])
  })

  it('alone on GCRA: the share’s units are as many as the whole’s times the share, from the TAT last heard', () => {
    const set = parsePolicies({ limit: 100, window: 1000, algorithm: 'gcra' })
    const half = parsePolicies({ limit: 50, window: 1000, algorithm: 'gcra', burst: 50 })
    const now = T
    const lease = new Lease(['k'], 0, set, now)
    // 10 ms a unit, tolerance 1000 ms: a TAT 800 ms ahead leaves 20 units.
    lease.seen[0] = { tokensOrTat: now + 800, updated: 0 }
    let admitted = 0
    for (let i = 0; i < 30; i++) if (lease.spendAlone(now, half, 1).every((o) => o.allowed)) admitted++
    expect(admitted).toBe(10)
    // A reply (Redis answers again) starts the next outage from what it shows, less what is still owed.
    lease.alone = undefined
    admitted = 0
    for (let i = 0; i < 30; i++) if (lease.spendAlone(now, half, 1).every((o) => o.allowed)) admitted++
    expect(admitted).toBe(0)
  })

  it('refuse: a denial Redis gave is a denial here, remembered until its retryAfter', () => {
    const set = parsePolicies({ limit: 10, window: 1000, algorithm: 'token-bucket' })
    const now = T
    const lease = new Lease(['k'], 0, set, now)
    lease.seen[0] = { tokensOrTat: 0.5 * 1000, updated: now }
    const [outcome] = lease.refuse(now, 1)
    expect(outcome?.allowed).toBe(false)
    expect(outcome?.retryAfter).toBe(50)
    expect(lease.deniedUntil).toBe(now + 50)
  })

  it('leases token bucket and GCRA that neither shape nor block', () => {
    expect(leasable(bucket)).toBe(true)
    expect(leasable(parsePolicy({ limit: 5, window: 1000, algorithm: 'gcra', maxDelay: 100 }))).toBe(false)
    expect(leasable(parsePolicy({ limit: 5, window: 1000, algorithm: 'gcra', blockFor: 100 }))).toBe(false)
    expect(leasable(parsePolicy({ limit: 5, window: 1000, algorithm: 'fixed-window' }))).toBe(false)
  })
})
