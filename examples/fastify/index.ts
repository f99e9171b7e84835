import type { AddressInfo } from 'node:net'
import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit } from '@sluice/fastify'
import Fastify from 'fastify'

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth; a real app checks a password hash. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

// Behind a reverse proxy, set trustProxy to its address (e.g. '10.0.0.1') so that request.ip,
// and with it the rate-limit key, is the client's address rather than the proxy's.
const app = Fastify({ trustProxy: false })

// Every route: 100 requests a minute per client IP, unless its config says otherwise.
await app.register(rateLimit, { limits: ['100/min'], store: new MemoryStore({ maxKeys: 50_000 }) })
// Concurrency only where a route asks for it.
await app.register(concurrencyLimit, { global: false })

app.get('/', async () => ({ hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /slow'] }))

// Brute-force protection: 5 failed attempts a minute and at most 1 a second, per client IP. A
// successful login is given back once answered (skipSuccessfulRequests), so only failures count.
const login = {
  limits: ['5/min', { limit: 1, window: '1s', algorithm: 'gcra' as const }],
  skipSuccessfulRequests: true,
}
app.post('/login', { config: { rateLimit: login } }, async (request, reply) => {
  if (request.headers.authorization !== DEMO_LOGIN) {
    return reply.code(401).send({ ok: false, failedAttemptsLeftThisMinute: request.rateLimit?.policies[0]?.remaining })
  }
  return { ok: true }
})

// A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
const items = {
  limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket' as const, name: 'items' }],
  cost: (request: { query: unknown }) => itemsOf((request.query as { items?: string }).items),
}
app.get('/api/items', { config: { rateLimit: items } }, async (request) => {
  const count = itemsOf((request.query as { items?: string }).items)
  return { items: Array.from({ length: count }, (_, i) => ({ id: i + 1 })), quotaLeft: request.rateLimit?.remaining }
})

// An expensive report: at most 2 in flight per client; a third concurrent call gets 429 at once.
app.get('/slow', { config: { concurrencyLimit: { limit: 2 } } }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 2000))
  return { report: 'done' }
})

const port = Number(process.env.PORT ?? 3000)
try {
  await app.listen({ port })
} catch (error) {
  failToListen(error as NodeJS.ErrnoException, port)
}
const url = `http://localhost:${(app.server.address() as AddressInfo).port}`
console.log(`sluice Fastify example listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => app.close().then(() => process.exit(0)))

/** A clear message instead of a stack trace when the port is taken (or not ours to use). */
function failToListen(error: NodeJS.ErrnoException, port: number): never {
  const reason =
    error.code === 'EADDRINUSE'
      ? `port ${port} is already in use (EADDRINUSE): stop the other server, or pick another port, e.g. PORT=${port + 1} pnpm start`
      : `cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port, e.g. PORT=3001 pnpm start`
  console.error(reason)
  process.exit(1)
}
