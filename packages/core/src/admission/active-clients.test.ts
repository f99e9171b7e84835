import { describe, expect, it } from 'vitest'
import { manualClock, T0 } from '../../../../test/support/clock.js'
import { ConfigError } from '../diagnostics/errors.js'
import { ActiveClients } from './active-clients.js'

const MINUTE = 60_000

function clocked(options: Partial<ConstructorParameters<typeof ActiveClients>[0]> = {}) {
  const { clock, now } = manualClock()
  const clients = new ActiveClients({ capacity: 1000, ...options, now })
  return { clock, clients }
}

describe('ActiveClients', () => {
  it('sizes its filters from capacity and falsePositiveRate and says what they take', () => {
    const clients = new ActiveClients({ capacity: 1_000_000 })
    // m = −n·ln p / ln²2 = 14 377 588 bits, rounded up to whole 64-bit words; k = (m/n)·ln 2 ≈ 10.
    expect(clients.bits).toBe(14_377_600)
    expect(clients.hashes).toBe(10)
    expect(clients.slotLength).toBe(MINUTE)
    expect(clients.bytes).toBe((31 * 14_377_600) / 8)
  })

  it.each([
    [{ capacity: 0 }, 'capacity'],
    [{ capacity: 1.5 }, 'capacity'],
    [{ capacity: 1000, falsePositiveRate: 0 }, 'falsePositiveRate'],
    [{ capacity: 1000, falsePositiveRate: 0.5 }, 'falsePositiveRate'],
    [{ capacity: 1000, falsePositiveRate: Number.NaN }, 'falsePositiveRate'],
    [{ capacity: 1000, slots: 0 }, 'slots'],
    [{ capacity: 1000, slots: 7 }, 'slots'],
    [{ capacity: 1000, window: 0 }, 'window'],
    [{ capacity: 1000, window: '30 parsecs' }, 'window'],
    [{ capacity: 1000, seed: -1 }, 'seed'],
    [{ capacity: 1000, now: 5 }, 'now'],
    [{ capacity: 1e9, falsePositiveRate: 1e-6 }, 'capacity'],
    [{ capacity: 50_000_000 }, 'capacity'],
  ])('rejects %j naming %s', (options, field) => {
    const build = () => new ActiveClients(options as never)
    expect(build).toThrow(ConfigError)
    expect(build).toThrow(expect.objectContaining({ field }))
  })

  it.each([1_000, 10_000, 100_000, 1_000_000])('estimates %i distinct clients within 5 %', (n) => {
    const { clients } = clocked({ capacity: 1_000_000, slots: 2, window: 2 * MINUTE })
    for (let i = 0; i < n; i++) clients.add(`client-${i}`)
    // Repeats do not count twice.
    for (let i = 0; i < Math.min(n, 1000); i++) clients.add(`client-${i}`)
    expect(Math.abs(clients.size() - n) / n).toBeLessThan(0.05)
  })

  it('has a false-positive rate within 1.5x of the design at capacity', () => {
    const capacity = 100_000
    const { clients } = clocked({ capacity })
    for (let i = 0; i < capacity; i++) clients.add(`member-${i}`)
    for (let i = 0; i < capacity; i++) expect(clients.has(`member-${i}`)).toBe(true)
    const probes = 400_000
    let yes = 0
    for (let i = 0; i < probes; i++) if (clients.has(`stranger-${i}`)) yes++
    const rate = yes / probes
    expect(rate).toBeLessThan(0.001 * 1.5)
    expect(rate).toBeGreaterThan(0.001 / 1.5)
  })

  it('forgets a client after the window, give or take one slot, and not before', () => {
    const { clock, clients } = clocked()
    // Mid-slot: the client is forgotten when its slot leaves the ring, 29.5 min later.
    clock.now = T0 + 30_000
    clients.add('alice')
    clock.now = T0 + 30 * MINUTE - 1
    expect(clients.has('alice')).toBe(true)
    expect(Math.round(clients.size())).toBe(1)
    clock.now = T0 + 30 * MINUTE
    expect(clients.has('alice')).toBe(false)
    expect(clients.size()).toBe(0)
  })

  it('keeps a client known while it keeps coming back', () => {
    const { clock, clients } = clocked()
    for (let minute = 0; minute < 120; minute += 20) {
      clock.now = T0 + minute * MINUTE
      expect(clients.has('bob')).toBe(minute > 0)
      clients.add('bob')
    }
  })

  it('forgets everything when the clock jumps past the window, and ignores a clock that steps back', () => {
    const { clock, clients } = clocked()
    for (let i = 0; i < 100; i++) clients.add(`c${i}`)
    clock.now = T0 - 5 * MINUTE
    clients.add('late')
    expect(clients.has('c1')).toBe(true)
    clock.now = T0 + 3 * 60 * MINUTE
    expect(clients.has('c1')).toBe(false)
    expect(clients.size()).toBe(0)
  })

  it('merges another node’s slot by OR: its clients become known here', () => {
    const a = clocked()
    const b = clocked()
    for (let i = 0; i < 50; i++) a.clients.add(`a${i}`)
    for (let i = 0; i < 50; i++) b.clients.add(`b${i}`)
    b.clients.add('a1')
    const slot = a.clients.currentSlot()
    expect(b.clients.mergeSlot(slot, a.clients.exportSlot(slot)!)).toBe(true)
    expect(b.clients.has('a7')).toBe(true)
    const merged = b.clients.size()
    expect(Math.abs(merged - 100)).toBeLessThan(2)
    // Merging twice changes nothing: OR is idempotent.
    b.clients.mergeSlot(slot, a.clients.exportSlot(slot)!)
    expect(b.clients.size()).toBe(merged)
    // Outside the window: refused.
    expect(b.clients.mergeSlot(slot - 30, new Uint8Array(1))).toBe(false)
    expect(b.clients.mergeSlot(slot + 1, new Uint8Array(1))).toBe(false)
  })

  it('merges a whole other instance, every live slot, and refuses one of another shape', () => {
    const a = clocked()
    const b = clocked()
    a.clients.add('early')
    a.clock.now += 5 * MINUTE
    b.clock.now += 5 * MINUTE
    a.clients.add('late')
    b.clients.merge(a.clients)
    expect(b.clients.has('early')).toBe(true)
    expect(b.clients.has('late')).toBe(true)
    expect(Math.round(b.clients.size())).toBe(2)
    expect(() => b.clients.merge(new ActiveClients({ capacity: 999_999 }))).toThrow(ConfigError)
  })

  it('merges bits that Redis trimmed after the last set byte', () => {
    const { clients } = clocked()
    const slot = clients.currentSlot()
    clients.mergeSlot(slot, Uint8Array.of(0b1000_0000))
    expect(clients.exportSlot(slot)![0]).toBe(0x80)
    expect(clients.size()).toBeGreaterThan(0)
  })

  it('reports only the positions it set since the last call, then the whole slot when that is smaller', () => {
    const { clients } = clocked({ capacity: 100_000 })
    clients.trackChanges()
    const slot = clients.currentSlot()
    clients.add('x')
    const first = clients.takeChanges(slot)
    expect(first && 'positions' in first && first.positions.length).toBe(clients.hashes)
    clients.add('x')
    expect(clients.takeChanges(slot)).toBeUndefined()
    // Merged bits are not this node's changes.
    clients.mergeSlot(slot, new Uint8Array(clients.bits / 8).fill(0x11))
    expect(clients.takeChanges(slot)).toBeUndefined()
    for (let i = 0; i < 20_000; i++) clients.add(`many-${i}`)
    const many = clients.takeChanges(slot)
    expect(many && 'bits' in many && many.bits.length).toBe(clients.bits / 8)
    clients.markAllChanged()
    expect(clients.takeChanges(slot)).toHaveProperty('bits')
    expect(clients.takeChanges(slot - 1)).toBeUndefined()
  })
})
