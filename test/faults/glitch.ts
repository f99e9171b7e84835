// A clock that glitches an hour forward and is corrected, and keys 100 KB long, measured.
//   REDIS_URL=redis://127.0.0.1:PORT pnpm tsx --conditions=source test/faults/glitch.ts
// For each store (MemoryStore, RedisStore, both on an injected clock) and algorithm: a `200 per
// 10 s` key spends its quota during the glitch (and one more request is denied); the clock is
// corrected; how long the key then stays denied (asked once a second), and the Retry-After the
// first denial after the correction gave. Then 5 000 keys of 100 KB on a MemoryStore: its heap.
import { type AlgorithmName, createLimiter, MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'

const HOUR = 3_600_000
const T0 = 1_800_000_000_000
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')

async function lockedFor(store: (now: () => number) => Store, algorithm: AlgorithmName) {
  const clock = { now: T0 + HOUR }
  const limiter = createLimiter({ limits: { limit: 200, window: '10s', algorithm }, store: store(() => clock.now) })
  for (let i = 0; i < 201; i++) await limiter.consume('k')
  clock.now = T0 + 2000
  const first = await limiter.consume('k')
  let waited = 0
  for (let d = first; !d.allowed && waited < 2 * HOUR; d = await limiter.consume('k')) {
    waited += 1000
    clock.now += 1000
  }
  return { lockedS: waited / 1000, retryAfterS: first.allowed ? 0 : Math.ceil(first.retryAfter / 1000) }
}

console.log(
  '| algorithm | MemoryStore: denied after the correction (s) / its first Retry-After | RedisStore: the same |',
)
console.log('|---|---|---|')
for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as AlgorithmName[]) {
  const memory = await lockedFor((now) => new MemoryStore({ now }), algorithm)
  const prefix = `glitch:${process.pid}:${algorithm}:`
  const redis = await lockedFor((now) => new RedisStore({ client, prefix, now, deniedCache: false }), algorithm)
  console.log(`| ${algorithm} | ${memory.lockedS} / ${memory.retryAfterS} | ${redis.lockedS} / ${redis.retryAfterS} |`)
}
client.disconnect()

const gc = (globalThis as { gc?: () => void }).gc
gc?.()
const before = process.memoryUsage().heapUsed
const store = new MemoryStore()
const limiter = createLimiter({ limits: '10/min', store })
const body = 'x'.repeat(100_000)
for (let i = 0; i < 5000; i++) await limiter.consume(`${i}:${body}`)
gc?.()
const heapMb = (process.memoryUsage().heapUsed - before) / 1e6
console.log(
  `\n5 000 keys of 100 KB on a MemoryStore: ${store.size} keys, heap +${heapMb.toFixed(1)} MB${gc ? '' : ' (without --expose-gc)'}`,
)
