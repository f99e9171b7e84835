import { describe, expect, it } from 'vitest'
import { toDecision } from '../limiter/decision.js'
import { parsePolicies } from '../policies/policy.js'
import { concurrencyProblem, QUOTA_EXCEEDED, rateLimitProblem, TEMPORARY_REDUCED_CAPACITY } from './problem.js'

const { policies } = parsePolicies(['100/min', '2/s'])

describe('rateLimitProblem', () => {
  it('is the draft quota-exceeded problem naming the violated policies', () => {
    const d = toDecision(
      'k',
      policies,
      [
        { allowed: true, remaining: 5, resetAfter: 1000, retryAfter: 0, delay: 0 },
        { allowed: false, remaining: 0, resetAfter: 1000, retryAfter: 1500, delay: 0 },
      ],
      'store',
    )
    expect(rateLimitProblem(d)).toEqual({
      type: QUOTA_EXCEEDED,
      title: 'Too Many Requests',
      status: 429,
      detail: 'Too many requests: the 2-per-1s limit would be exceeded. Retry in 2 seconds.',
      'violated-policies': ['2-per-1s'],
    })
  })

  it('lists several violated policies and follows a custom status', () => {
    const d = toDecision(
      'k',
      policies,
      [
        { allowed: false, remaining: 0, resetAfter: 9000, retryAfter: 800, delay: 0 },
        { allowed: false, remaining: 0, resetAfter: 1000, retryAfter: 500, delay: 0 },
      ],
      'store',
    )
    const problem = rateLimitProblem(d, 503)
    expect(problem).toMatchObject({ type: TEMPORARY_REDUCED_CAPACITY, title: 'Service Unavailable', status: 503 })
    expect(problem['violated-policies']).toEqual(['100-per-1m', '2-per-1s'])
    expect(problem.detail).toBe(
      'Too many requests: the 100-per-1m, 2-per-1s limits would be exceeded. Retry in 1 second.',
    )
  })
})

describe('concurrencyProblem', () => {
  it('names the concurrency policy', () => {
    expect(concurrencyProblem('uploads', 2)).toEqual({
      type: QUOTA_EXCEEDED,
      title: 'Too Many Requests',
      status: 429,
      detail: 'Too many requests in flight: at most 2 at a time. Retry when one finishes.',
      'violated-policies': ['uploads'],
    })
  })
})
