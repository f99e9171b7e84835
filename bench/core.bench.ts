/**
 * ns per awaited decision, in one process, side by side: sluice's MemoryStore (each algorithm,
 * one and two policies), express-rate-limit's MemoryStore, rate-limiter-flexible's
 * RateLimiterMemory, and an awaited bare Map counter as the floor. Limits are high so that
 * nothing is denied (rate-limiter-flexible rejects on denial, which would measure exceptions).
 *
 *   pnpm bench:core [--rounds 7] [--ops 200000]
 */
import { ALGORITHMS, createLimiter, MemoryStore, type PolicyOptions } from '@sluice/core'
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit'
import { RateLimiterMemory } from 'rate-limiter-flexible'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const ROUNDS = option('rounds', 7)
const OPS = option('ops', 200_000)
const KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

type Contender = { name: string; decide: (key: string) => Promise<unknown> }

const counts = new Map<string, number>()
const stamped = new Map<string, number>()
const contenders: Contender[] = [
  {
    name: 'floor: awaited Map counter',
    decide: async (key) => {
      const count = (counts.get(key) ?? 0) + 1
      counts.set(key, count)
      return count
    },
  },
  {
    // Every limiter reads the clock once per decision; on some VMs that alone is ~50–100 ns.
    name: 'reference: awaited Map counter + Date.now()',
    decide: async (key) => {
      const count = (stamped.get(key) ?? 0) + 1
      stamped.set(key, count)
      return Date.now() + count
    },
  },
]

const minute = (algorithm: PolicyOptions['algorithm']): PolicyOptions => ({ limit: 10_000, window: 60_000, algorithm })
const second = (algorithm: PolicyOptions['algorithm']): PolicyOptions => ({
  limit: 10_000,
  window: 1_000,
  algorithm,
  name: 'burst',
})
for (const algorithm of ALGORITHMS) {
  const one = createLimiter({ limits: minute(algorithm), store: new MemoryStore({ maxKeys: 50_000 }) })
  const two = createLimiter({
    limits: [minute(algorithm), second(algorithm)],
    store: new MemoryStore({ maxKeys: 50_000 }),
  })
  contenders.push({ name: `sluice ${algorithm}, 1 policy`, decide: (key) => one.consume(key) })
  contenders.push({ name: `sluice ${algorithm}, 2 policies`, decide: (key) => two.consume(key) })
}

const erl = new ErlMemoryStore()
erl.init({ windowMs: 60_000 } as never)
contenders.push({ name: 'express-rate-limit MemoryStore', decide: (key) => erl.increment(key) })
const rlf = new RateLimiterMemory({ points: 1_000_000, duration: 60 })
contenders.push({ name: 'rate-limiter-flexible RateLimiterMemory', decide: (key) => rlf.consume(key) })

async function measure(contender: Contender): Promise<number> {
  const start = process.hrtime.bigint()
  for (let i = 0; i < OPS; i++) await contender.decide(KEYS[i % KEYS.length] as string)
  return Number(process.hrtime.bigint() - start) / OPS
}

const samples = new Map<string, number[]>(contenders.map((c) => [c.name, []]))
for (const contender of contenders) await measure(contender) // warm up every path before timing any
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order each round so no contender always runs first or last on a noisy machine.
  for (let i = 0; i < contenders.length; i++) {
    const contender = contenders[(i + round) % contenders.length] as Contender
    samples.get(contender.name)?.push(await measure(contender))
  }
}
erl.shutdown()

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const floor = median(samples.get('floor: awaited Map counter') as number[])
const erlNs = median(samples.get('express-rate-limit MemoryStore') as number[])
const rlfNs = median(samples.get('rate-limiter-flexible RateLimiterMemory') as number[])

console.log(
  `node ${process.version}, ${OPS} awaited decisions per round over ${KEYS.length} keys, median of ${ROUNDS} rounds\n`,
)
console.log('| contender | ns/decision | × floor | vs express-rate-limit | vs rate-limiter-flexible |')
console.log('|---|---:|---:|---:|---:|')
for (const contender of contenders) {
  const ns = median(samples.get(contender.name) as number[])
  const row = [
    contender.name,
    ns.toFixed(0),
    (ns / floor).toFixed(2),
    `${(erlNs / ns).toFixed(2)}× faster`,
    `${(rlfNs / ns).toFixed(2)}× faster`,
  ]
  console.log(`| ${row.join(' | ')} |`)
}
