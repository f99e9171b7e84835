import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { CountMinSketch } from './count-min.js'
import { zipfSampler } from './zipf.test-util.js'

const key = fc.string({ maxLength: 12 })

describe('CountMinSketch', () => {
  it('never estimates below the true count', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, fc.integer({ min: 0, max: 5 })), { maxLength: 400 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 64 }),
        fc.nat(0xffff_ffff),
        (stream, hashes, slots, seed) => {
          const sketch = new CountMinSketch({ hashes, slots, seed })
          const truth = new Map<string, number>()
          for (const [k, n] of stream) {
            const count = (truth.get(k) ?? 0) + n
            truth.set(k, count)
            expect(sketch.incr(k, n)).toBeGreaterThanOrEqual(count)
          }
          for (const [k, count] of truth) expect(sketch.estimate(k)).toBeGreaterThanOrEqual(count)
        },
      ),
    )
  })

  it('is exact for a few keys in a wide sketch', () => {
    const sketch = new CountMinSketch({ hashes: 4, slots: 8192 })
    expect(sketch.incr('red')).toBe(1)
    expect(sketch.incr('red', 4)).toBe(5)
    expect(sketch.incr('blue', 3)).toBe(3)
    expect(sketch.estimate('red')).toBe(5)
    expect(sketch.estimate('green')).toBe(0)
    expect(sketch.decr('red', 2)).toBe(3)
    expect(sketch.bytes).toBe(4 * 8192 * 8)
  })

  it('stays within e/slots of the total with probability 1 − e^-hashes on a Zipf stream', () => {
    fc.assert(
      fc.property(fc.nat(0xffff_ffff), fc.integer({ min: 1, max: 2 ** 31 }), (seed, streamSeed) => {
        const hashes = 4
        const slots = 256
        const keys = 5000
        const events = 50_000
        const sketch = new CountMinSketch({ hashes, slots, seed })
        const truth = new Float64Array(keys)
        const next = zipfSampler(keys, 1.1, streamSeed)
        for (let i = 0; i < events; i++) {
          const k = next()
          truth[k] = (truth[k] as number) + 1
          sketch.incr(`key:${k}`)
        }
        const bound = (Math.E / slots) * events
        let seen = 0
        let beyond = 0
        for (let k = 0; k < keys; k++) {
          if (truth[k] === 0) continue
          seen++
          if (sketch.estimate(`key:${k}`) - (truth[k] as number) > bound) beyond++
        }
        // Each key is within the bound with probability ≥ 1 − e^-hashes (≈ 98.2%).
        expect(beyond / seen).toBeLessThanOrEqual(Math.exp(-hashes))
      }),
      { numRuns: 10 },
    )
  })

  it('spreads keys evenly over each row, and independently between rows (what the bound assumes)', () => {
    const hashes = 3
    const slots = 64
    const keys = 20_000
    const sketch = new CountMinSketch({ hashes, slots })
    // Keys grouped by their columns in rows 0..r: a group of n holds n(n − 1)/2 colliding pairs.
    const groups = Array.from({ length: hashes }, () => new Map<string, number>())
    for (let i = 0; i < keys; i++) {
      const cells = sketch.cellsOf(`user:${i}`)
      let prefix = ''
      for (let row = 0; row < hashes; row++) {
        const column = (cells[row] as number) - row * slots
        if (column < 0 || column >= slots) throw new Error(`column ${column} of row ${row} is out of range`)
        prefix += `${column},`
        const group = groups[row] as Map<string, number>
        group.set(prefix, (group.get(prefix) ?? 0) + 1)
      }
    }
    const pairs = groups.map((group) => [...group.values()].reduce((sum, n) => sum + (n * (n - 1)) / 2, 0))
    const all = (keys * (keys - 1)) / 2
    // Independent rows: each further row keeps about 1/slots of the pairs that collided so far.
    // (Plain double hashing fails this at row 2: two rows' collision would imply every row's.)
    for (const [row, shared] of pairs.entries()) {
      const expected = all / slots ** (row + 1)
      expect(shared / expected).toBeGreaterThan(0.8)
      expect(shared / expected).toBeLessThan(1.2)
    }
  })

  it('reset forgets every count', () => {
    const sketch = new CountMinSketch({ hashes: 3, slots: 16 })
    for (let i = 0; i < 100; i++) sketch.incr(`k${i}`)
    sketch.reset()
    for (let i = 0; i < 100; i++) expect(sketch.estimate(`k${i}`)).toBe(0)
  })

  it('merge gives estimates at or above the summed counts, and equal to one sketch fed both streams', () => {
    fc.assert(
      fc.property(fc.array(key, { maxLength: 200 }), fc.array(key, { maxLength: 200 }), (left, right) => {
        const shape = { hashes: 3, slots: 32, seed: 7 }
        const a = new CountMinSketch(shape)
        const b = new CountMinSketch(shape)
        const both = new CountMinSketch(shape)
        const truth = new Map<string, number>()
        for (const k of left) a.incr(k)
        for (const k of right) b.incr(k)
        for (const k of [...left, ...right]) {
          both.incr(k)
          truth.set(k, (truth.get(k) ?? 0) + 1)
        }
        a.merge(b)
        for (const [k, count] of truth) {
          expect(a.estimate(k)).toBe(both.estimate(k))
          expect(a.estimate(k)).toBeGreaterThanOrEqual(count)
        }
      }),
    )
  })

  it('refuses to merge a sketch of another shape or seed', () => {
    const a = new CountMinSketch({ hashes: 3, slots: 32 })
    for (const other of [
      new CountMinSketch({ hashes: 4, slots: 32 }),
      new CountMinSketch({ hashes: 3, slots: 64 }),
      new CountMinSketch({ hashes: 3, slots: 32, seed: 1 }),
    ]) {
      expect(() => a.merge(other)).toThrow(ConfigError)
    }
  })

  it('depends on the seed', () => {
    const a = new CountMinSketch({ hashes: 1, slots: 1 << 20, seed: 1 })
    const b = new CountMinSketch({ hashes: 1, slots: 1 << 20, seed: 2 })
    expect([...a.cellsOf('client:1')]).not.toEqual([...b.cellsOf('client:1')])
  })

  it('validates its options and counts, naming the field', () => {
    const cases: [unknown, string][] = [
      [{ hashes: 0, slots: 8 }, 'hashes'],
      [{ hashes: 1.5, slots: 8 }, 'hashes'],
      [{ hashes: 17, slots: 8 }, 'hashes'],
      [{ hashes: 2, slots: 0 }, 'slots'],
      [{ hashes: 2, slots: '8' }, 'slots'],
      [{ hashes: 2, slots: 2 ** 25 }, 'slots'],
      [{ hashes: 2, slots: 8, seed: -1 }, 'seed'],
      [{ hashes: 2, slots: 8, seed: 2 ** 32 }, 'seed'],
      [null, 'options'],
    ]
    for (const [options, field] of cases) {
      expect(() => new CountMinSketch(options as never)).toThrow(
        expect.objectContaining({ name: 'ConfigError', field }),
      )
    }
    const sketch = new CountMinSketch({ hashes: 2, slots: 8 })
    for (const n of [-1, 0.5, Number.NaN, 2 ** 53]) {
      expect(() => sketch.incr('k', n)).toThrow(expect.objectContaining({ name: 'ConfigError', field: 'n' }))
    }
  })
})
