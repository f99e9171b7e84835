import { describe, expect, it } from 'vitest'
import type { Outcome } from '../algorithms/index.js'
import { denied as no, admitted as ok } from '../algorithms/outcome.js'
import { parsePolicies } from '../policies/policy.js'
import { toDecision } from './decision.js'

const { policies } = parsePolicies(['100/min', '2/s'])

describe('decision.binding', () => {
  it('is the first policy with the least remaining when admitted', () => {
    expect(toDecision('k', policies, [ok(1, 10), ok(1, 20)], 'store').binding.name).toBe('100-per-1m')
    const admitted = toDecision('k', policies, [ok(57, 33_001), ok(1, 400)], 'store')
    expect(admitted.binding.name).toBe('2-per-1s')
    expect(admitted).toMatchObject({ limit: 2, remaining: 1, resetAfter: 400, retryAfter: 0 })
  })

  it('is the denying policy with the longest wait when denied, agreeing with the decision', () => {
    const d = toDecision('k', policies, [no(0, 60_000, 5_000), no(0, 1_000, 900)], 'store')
    expect(d.binding.name).toBe('100-per-1m')
    expect(d).toMatchObject({ allowed: false, limit: 100, remaining: 0, resetAfter: 60_000, retryAfter: 5_000 })
    const denied = toDecision('k', policies, [ok(57, 33_001), no(0, 2_000, 1_200)], 'store')
    expect(denied.binding.name).toBe('2-per-1s')
    expect(denied).toMatchObject({ limit: 2, remaining: 0, retryAfter: 1_200 })
  })

  it('takes the longest shaping delay of the policies, and none when denied', () => {
    const shaped = (delay: number): Outcome => ({ ...ok(0, 500), delay })
    expect(toDecision('k', policies, [shaped(100), shaped(300)], 'store').delay).toBe(300)
    expect(toDecision('k', policies, [shaped(100), no(0, 1, 1)], 'store').delay).toBe(0)
  })
})
