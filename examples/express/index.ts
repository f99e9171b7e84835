import type { AddressInfo } from 'node:net'
import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit, rateLimitOf } from '@sluice/express'
import express from 'express'

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth; a real app checks a password hash. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

const app = express()
// Behind a reverse proxy, set this to the proxy hops (e.g. 1) so that req.ip, and with it the
// rate-limit key, is the client's address rather than the proxy's.
app.set('trust proxy', false)

app.get('/', (_req, res) => {
  res.json({ hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /slow'] })
})

// Brute-force protection: 5 failed attempts a minute and at most 1 a second, per client IP. A
// successful login is given back once answered (skipSuccessfulRequests), so only failures count.
app.post(
  '/login',
  rateLimit({ limits: ['5/min', { limit: 1, window: '1s', algorithm: 'gcra' }], skipSuccessfulRequests: true }),
  (req, res) => {
    if (req.get('authorization') !== DEMO_LOGIN) {
      res.status(401).json({ ok: false, failedAttemptsLeftThisMinute: rateLimitOf(req)?.policies[0]?.remaining })
      return
    }
    res.json({ ok: true })
  },
)

// A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
app.get(
  '/api/items',
  rateLimit({
    limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }],
    store: new MemoryStore({ maxKeys: 50_000 }),
    cost: (req) => itemsOf(req.query.items),
  }),
  (req, res) => {
    const count = itemsOf(req.query.items)
    res.json({
      items: Array.from({ length: count }, (_, i) => ({ id: i + 1 })),
      quotaLeft: rateLimitOf(req)?.remaining,
    })
  },
)

// An expensive report: at most 2 in flight per client; a third concurrent call gets 429 at once.
app.get('/slow', concurrencyLimit({ limit: 2 }), async (_req, res) => {
  await new Promise((resolve) => setTimeout(resolve, 2000))
  res.json({ report: 'done' })
})

const port = Number(process.env.PORT ?? 3000)
// Express 5 calls this callback with the error when listening fails (a port in use).
const server = app.listen(port, (error?: NodeJS.ErrnoException) => {
  if (error) failToListen(error, port)
  const url = `http://localhost:${(server.address() as AddressInfo).port}`
  console.log(`sluice Express example listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)
})

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => server.close(() => process.exit(0)).closeAllConnections())

/** A clear message instead of a stack trace when the port is taken (or not ours to use). */
function failToListen(error: NodeJS.ErrnoException, port: number): never {
  const reason =
    error.code === 'EADDRINUSE'
      ? `port ${port} is already in use (EADDRINUSE): stop the other server, or pick another port, e.g. PORT=${port + 1} pnpm start`
      : `cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port, e.g. PORT=3001 pnpm start`
  console.error(reason)
  process.exit(1)
}
