import { parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { Shares } from './shares.js'

describe('Shares', () => {
  it('two plans of one named policy (one set id) are each cut from their own limit', () => {
    const shares = new Shares(undefined)
    const free = parsePolicies({ name: 'plan', limit: 100, window: '1d' })
    const pro = parsePolicies({ name: 'plan', limit: 1000, window: '1d' })
    expect(free.id).toBe(pro.id)
    expect(shares.of(free, 0.5).policies[0]?.limit).toBe(50)
    expect(shares.of(pro, 0.5).policies[0]?.limit).toBe(500)
    expect(shares.of(free, 0.25).policies[0]?.limit).toBe(25)
    expect(shares.of(free, 0.5)).toBe(shares.of(free, 0.5))
  })
})
