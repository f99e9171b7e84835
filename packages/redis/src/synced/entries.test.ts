import { type Policy, parsePolicies } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { Counts, type PolicyCounters, PolicyShape } from './counters.js'
import { Entries, type Entry } from './entries.js'

const counts = new Counts()
const make = (policy: Policy) =>
  counts.make(new PolicyShape(policy.id, policy, (key, start) => `${key}:${policy.id}:${start}`), 'k', policy.limit)
/** Entries and counters are handles made on use: the same one is the same row. */
const rowOf = (handle: PolicyCounters | undefined) => handle?.row
const same = (a: Entry, b: Entry | undefined) =>
  b !== undefined && a.key === b.key && a.counters.map(rowOf).join() === b.counters.map(rowOf).join()

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
    const entries = new Entries(counts)
    const a = entries.add('k', free, make)
    const b = entries.add('k', pro, make)
    expect(rowOf(b.counters[0])).toBe(rowOf(a.counters[0]))
    expect(rowOf(b.counters[1])).not.toBe(rowOf(a.counters[1]))
    expect(rowOf(entries.counters('k', minute.id))).toBe(rowOf(b.counters[1]))
    expect(rowOf(entries.add('other', pro, make).counters[0])).not.toBe(rowOf(a.counters[0]))
    expect(entries.size).toBe(3)
  })

  it('counters are forgotten with the last entry holding them, not before', () => {
    const entries = new Entries(counts)
    const a = entries.add('k', free, make)
    entries.add('k', pro, make)
    expect(entries.evictOne((entry) => !same(a, entry))?.forgotten.map(rowOf)).toEqual([rowOf(a.counters[1])])
    expect(rowOf(entries.counters('k', day.id))).toBe(rowOf(a.counters[0]))
    expect(entries.counters('k', second.id)).toBeUndefined()
    expect(entries.evictOne(() => false)?.key).toBe('k')
    expect(entries.counters('k', day.id)).toBeUndefined()
    expect(entries.size).toBe(0)
    // Made again from nothing: fresh counters, not the forgotten ones (which are still held by no entry).
    const again = entries.add('k', free, make)
    expect(rowOf(again.counters[0])).not.toBe(rowOf(a.counters[0]))
    expect(again.counters[0]?.holders).toBe(1)
  })

  it('evicts by recency and frequency of use: uses left buy passes of the sweep, a kept entry keeps its uses', () => {
    const entries = new Entries(counts)
    const [once, hot, kept] = ['once', 'hot', 'kept', 'twice'].map((key) => entries.add(key, free, make)) as Entry[]
    ;(entries.get('twice', free) as Entry).used = 1
    ;(hot as Entry).used = 3
    ;(kept as Entry).used = 3
    // once (decided on once: no use left) goes first.
    expect(entries.evictOne((entry) => same(kept as Entry, entry))?.key).toBe('once')
    expect(once).toBeDefined()
    // hot and twice passed over once each; kept stays with its uses; a turn without a drop gives the passes back.
    expect(entries.evictOne((entry) => same(kept as Entry, entry))).toBeUndefined()
    expect([entries.get('hot', free)?.used, entries.get('kept', free)?.used]).toEqual([3, 3])
    // Worn (the store synced and still found none): twice goes before hot.
    expect(entries.evictOne((entry) => same(kept as Entry, entry), true)?.key).toBe('twice')
    expect(entries.get('hot', free)?.used).toBe(1)
    expect(entries.evictOne((entry) => same(kept as Entry, entry), true)?.key).toBe('hot')
  })
})
