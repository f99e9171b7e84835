/**
 * A burst of requests through one limiter per algorithm, on a simulated clock, printing each
 * decision: a quick way to see how the algorithms differ.  Run: `pnpm start:core`.
 */
import { ALGORITHMS, createLimiter, MemoryStore } from '@sluice/core'

const clock = { now: Date.UTC(2026, 0, 1) }
const store = new MemoryStore({ now: () => clock.now })

for (const algorithm of ALGORITHMS) {
  const limiter = createLimiter({ limits: [{ limit: 5, window: '1s', algorithm }, '20/min'], store })
  console.log(`\n${algorithm}: 5/s plus 20/min, a request every 100 ms`)
  for (let i = 0; i < 12; i++) {
    const d = await limiter.consume('client-1')
    const verdict = d.allowed ? 'allowed' : `denied, retry in ${d.retryAfter} ms`
    console.log(
      `  t=${String(i * 100).padStart(4)} ms  ${verdict.padEnd(26)} remaining ${d.remaining} of ${d.limit}, full again in ${d.resetAfter} ms`,
    )
    clock.now += 100
  }
  clock.now += 60_000
}
