import { describe, expect, it } from 'vitest'
import { CHUNK, Slab } from './slab.js'

const slab = () => new Slab({ floats: 2, ints: 1, bytes: 1 })

describe('Slab: rows of numbers with no object per row', () => {
  it('a row comes zeroed, also when it is a freed one taken again', () => {
    const rows = slab()
    const row = rows.alloc()
    rows.setF(row, 1, 2.5)
    rows.setI(row, 0, 7)
    rows.setB(row, 0, 3)
    rows.free(row)
    const again = rows.alloc()
    expect(again).toBe(row)
    expect([rows.f(again, 0), rows.f(again, 1), rows.i(again, 0), rows.b(again, 0)]).toEqual([0, 0, 0, 0])
    expect(rows.size).toBe(1)
  })

  it('a freed row’s generation moves on, so a handle made before it can tell', () => {
    const rows = slab()
    const row = rows.alloc()
    const before = rows.gen(row)
    rows.free(row)
    expect(rows.alloc()).toBe(row)
    expect(rows.gen(row)).not.toBe(before)
  })

  it('takes rows from the lowest chunk with room, so the chunks above empty as rows go', () => {
    const rows = slab()
    const all = Array.from({ length: 3 * CHUNK }, () => rows.alloc())
    // One row freed in the top chunk, one in the bottom: the next row is the bottom one.
    rows.free(all[3 * CHUNK - 1] as number)
    rows.free(all[5] as number)
    expect(rows.alloc()).toBe(all[5])
    expect(rows.alloc()).toBe(all[3 * CHUNK - 1])
  })

  it('gives an emptied chunk’s arrays back, keeping one spare, and makes them again when rows come back', () => {
    const rows = slab()
    const all = Array.from({ length: 10 * CHUNK }, () => rows.alloc())
    expect(rows.chunks).toBe(10)
    for (const row of all) rows.free(row)
    expect(rows.chunks).toBe(1)
    expect(rows.size).toBe(0)
    const again = Array.from({ length: 3 * CHUNK }, () => rows.alloc())
    expect(rows.chunks).toBe(3)
    // Places given back are filled before the slab grows: rows stay as low as they were.
    expect(Math.max(...again)).toBeLessThan(3 * CHUNK)
  })

  it('generations outlive a chunk given back: a handle from before still sees its row is not its own', () => {
    const rows = slab()
    const all = Array.from({ length: 2 * CHUNK }, () => rows.alloc())
    const high = all[2 * CHUNK - 1] as number
    const gen = rows.gen(high)
    // The low chunk empties first and is kept spare; the high one is given back.
    for (const row of all) rows.free(row)
    expect(rows.chunks).toBe(1)
    for (let i = 0; i < 2 * CHUNK; i++) rows.alloc()
    expect(rows.gen(high)).not.toBe(gen)
  })

  it('a free row links the next through an int column: a shape without one is refused', () => {
    expect(() => new Slab({ floats: 1, ints: 0 })).toThrow(/int column/)
  })
})
