import { type Policy, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { PolicyCounters } from './counters.js'
import { Entries, type Entry } from './entries.js'

const make = (policy: Policy) => new PolicyCounters(policy.id, policy, (start) => `${policy.id}:${start}`)

describe('Entries: counters per key and policy id, shared across sets', () => {
  const free = parsePolicies([
    { name: 'day', limit: 100, window: '1d' },
    { name: 'second', limit: 5, window: '1s' },
  ])
  const pro = parsePolicies([
    { name: 'day', limit: 1000, window: '1d' },
    { name: 'minute', limit: 100, window: '1m' },
  ])
  const [day, second] = free.policies as [Policy, Policy]
  const minute = pro.policies[1] as Policy

  it('a set holding a policy id the key already has gets those counters; other keys get their own', () => {
    const entries = new Entries()
    const a = entries.add('k', free, make)
    const b = entries.add('k', pro, make)
    expect(b.counters[0]).toBe(a.counters[0])
    expect(b.counters[1]).not.toBe(a.counters[1])
    expect(entries.counters('k', minute.id)).toBe(b.counters[1])
    expect(entries.add('other', pro, make).counters[0]).not.toBe(a.counters[0])
    expect(entries.size).toBe(3)
  })

  it('counters are forgotten with the last entry holding them, not before', () => {
    const entries = new Entries()
    const a = entries.add('k', free, make)
    const b = entries.add('k', pro, make)
    a.used = false
    b.used = false
    expect(entries.evictOne((entry) => entry !== a)?.forgotten).toEqual([a.counters[1]])
    expect(entries.counters('k', day.id)).toBe(a.counters[0])
    expect(entries.counters('k', second.id)).toBeUndefined()
    expect(entries.evictOne(() => false)?.key).toBe('k')
    expect(entries.counters('k', day.id)).toBeUndefined()
    expect(entries.size).toBe(0)
    // Made again from nothing: a fresh PolicyCounters, not the forgotten one.
    expect(entries.add('k', free, make).counters[0]).not.toBe(a.counters[0])
  })

  it('evicts by recency of use: an entry used since the sweep passed it gets a second chance, a kept one goes to the back', () => {
    const entries = new Entries()
    const [old, hot, kept, cold] = ['old', 'hot', 'kept', 'cold'].map((key) => entries.add(key, free, make)) as Entry[]
    for (const entry of [old, kept, cold] as Entry[]) entry.used = false
    // old goes (unused, not kept).
    expect(entries.evictOne((entry) => entry === kept)?.key).toBe('old')
    // hot was used: it gets a second chance; kept stays; cold goes.
    expect(entries.evictOne((entry) => entry === kept)?.key).toBe('cold')
    // hot, used again since the sweep passed it: a whole turn finds nothing to evict now.
    ;(hot as Entry).used = true
    expect(entries.evictOne((entry) => entry === kept)).toBeUndefined()
    // Not used since: its turn.
    expect(entries.evictOne((entry) => entry === kept)?.key).toBe('hot')
    expect(entries.size).toBe(1)
  })
})
