/**
 * Where a CountMinSketch.incr's time goes in one thread (issue 42: 1.3–1.7× a Map, where seed 000
 * reports 4–5×): the same loop over the same keys with one more step each row, best of 4 rounds
 * after a warm-up, beside a Map. `--keys 1000` keeps the keys in cache (what pingora's u32 keys
 * cost to fetch); `--keys 1000000` adds the cache misses of fetching a random string.
 *
 *   node --import tsx --conditions=source bench/sketch-cost.bench.ts [--keys 1000]

 */
import { CountMinSketch } from '@sluice/core'
import { fmix32, hashLanes, KeyHasher } from '../packages/core/src/sketch/hash.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const N = option('keys', 1000)
const EVENTS = option('events', 10_000_000)
/** Run only this step (by its index), once: for a profiler. */
const ONLY = option('only', Number.NaN)
const keys = Array.from({ length: N }, (_, i) => {
  const x = Math.imul(i, 0x9e3779b1) >>> 0
  return [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255].join('.')
})
const picks = new Uint32Array(EVENTS)
let state = 0x2545f491
for (let i = 0; i < EVENTS; i++) {
  state ^= state << 13
  state ^= state >>> 17
  state ^= state << 5
  picks[i] = (state >>> 0) % N
}
const key = (i: number) => keys[picks[i] as number] as string
const sink = new Int32Array(1)
const lanes = new Int32Array(2)
const hasher = new KeyHasher(3, 1024, 0)
const sketch = new CountMinSketch({ hashes: 3, slots: 1024 })
const counters = new Float64Array(3 * 1024)
const map = new Map<string, number>()
const shifted = new Int32Array(3)
/** The attempt: for a power-of-two `slots`, multiply-shift is a plain shift (same columns). */
function cellsByShift(k: string): Int32Array {
  const [h1, h2] = hashLanes(k, 0, fmix32(0x5bd1e995), lanes) as unknown as [number, number]
  for (let row = 0; row < 3; row++) shifted[row] = row * 1024 + (fmix32((h1 + Math.imul(row, h2)) | 0) >>> 22)
  return shifted
}

const steps: [string, () => void][] = [
  [
    'read the key’s characters',
    () => {
      for (let i = 0; i < EVENTS; i++) {
        const k = key(i)
        let sum = 0
        for (let j = 0; j < k.length; j++) sum += k.charCodeAt(j)
        sink[0] = (sink[0] as number) + sum
      }
    },
  ],
  [
    '+ two hash lanes',
    () => {
      for (let i = 0; i < EVENTS; i++) sink[0] = (sink[0] as number) + (hashLanes(key(i), 0, 1, lanes)[0] as number)
    },
  ],
  [
    '+ 3 rows’ columns (cells)',
    () => {
      for (let i = 0; i < EVENTS; i++) sink[0] = (sink[0] as number) + (hasher.cells(key(i))[0] as number)
    },
  ],
  [
    '  columns by shift (attempt)',
    () => {
      for (let i = 0; i < EVENTS; i++) sink[0] = (sink[0] as number) + (cellsByShift(key(i))[0] as number)
    },
  ],
  [
    '+ 3 counter adds',
    () => {
      for (let i = 0; i < EVENTS; i++) {
        const cells = hasher.cells(key(i))
        for (let row = 0; row < 3; row++)
          counters[cells[row] as number] = (counters[cells[row] as number] as number) + 1
      }
    },
  ],
  [
    'CountMinSketch.incr',
    () => {
      for (let i = 0; i < EVENTS; i++) sketch.incr(key(i))
    },
  ],
  [
    'Map get + set',
    () => {
      for (let i = 0; i < EVENTS; i++) {
        const k = key(i)
        map.set(k, (map.get(k) ?? 0) + 1)
      }
    },
  ],
]
const best = new Map<string, number>()
for (let round = 0; round < (Number.isNaN(ONLY) ? 5 : 1); round++) {
  for (const [name, run] of Number.isNaN(ONLY) ? steps : steps.slice(ONLY, ONLY + 1)) {
    const start = performance.now()
    run()
    const ns = ((performance.now() - start) * 1e6) / EVENTS
    if (round > 0 || !Number.isNaN(ONLY)) best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, ns))
  }
}
console.log(`# ${N} keys, ${EVENTS} events, best of 4 rounds`)
for (const [name] of steps.filter(([name]) => best.has(name)))
  console.log(`${name.padEnd(30)} ${(best.get(name) as number).toFixed(1)} ns`)
