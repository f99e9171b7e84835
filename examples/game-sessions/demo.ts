/**
 * Fills the game past maxActive and shows throttling mode: players already in a session keep
 * playing, new players get 429 with Retry-After; 30 minutes later (fast-forwarded) the players
 * who left are forgotten and newcomers are let in again.
 *
 *   pnpm --filter @sluice/example-game-sessions demo
 */
import type { AddressInfo } from 'node:net'
import { createGameApp } from './app.js'

const MAX_ACTIVE = 50
const clock = { now: Date.now() }
const { app } = createGameApp({ maxActive: MAX_ACTIVE, now: () => clock.now })
const server = app.listen(0)
await new Promise((resolve) => server.once('listening', resolve))
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

async function play(token: string) {
  const response = await fetch(`${base}/play`, { headers: { authorization: `Bearer ${token}` } })
  const body = (await response.json()) as { admission?: { throttling: boolean; active: number } }
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body }
}

async function wave(label: string, tokens: string[]) {
  const counts = new Map<number, number>()
  let last: Awaited<ReturnType<typeof play>> | undefined
  for (const token of tokens) {
    last = await play(token)
    counts.set(last.status, (counts.get(last.status) ?? 0) + 1)
  }
  const summary = [...counts].map(([status, n]) => `${n}× ${status}`).join(', ')
  console.log(`${label.padEnd(52)} ${summary}${last?.retryAfter ? ` (Retry-After: ${last.retryAfter}s)` : ''}`)
  return counts
}

const players = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`)

console.log(`maxActive ${MAX_ACTIVE}, sessions of 30 minutes, keyed by access token\n`)
await wave('50 players start a session', players('early', 50))
await wave('10 more arrive: the 51st tips it into throttling', players('surge', 10))
const kept = await wave('the 51 players in a session keep playing', [...players('early', 50), 'surge-0'])
const refused = await wave('40 new players arrive (throttling mode)', players('late', 40))
await wave('they retry: still refused, never recorded', players('late', 40))
clock.now += 15 * 60_000
await wave('15 min later: 20 of the first players still play', players('early', 20))
clock.now += 16 * 60_000
await wave('31 min after the start: only those 20 are active', players('early', 20))
const back = await wave('10 of the new players try again', players('late', 10))
server.close()

const ok = kept.get(200) === 51 && refused.get(429) === 40 && back.get(200) === 10
console.log(ok ? '\nold sessions were served, new ones got 429 until activity dropped' : '\nunexpected result')
process.exitCode = ok ? 0 : 1
