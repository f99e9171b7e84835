import type { AddressInfo } from 'node:net'
import Router from '@koa/router'
import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit } from '@sluice/koa'
import Koa from 'koa'

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth; a real app checks a password hash. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

// Behind a reverse proxy, set `proxy: true` (and `maxIpsCount` to the proxy hops) so that
// ctx.ip, and with it the rate-limit key, is the client's address rather than the proxy's.
const app = new Koa({ proxy: false })
const router = new Router()

router.get('/', (ctx) => {
  ctx.body = { hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /slow'] }
})

// Brute-force protection: 5 failed attempts a minute and at most 1 a second, per client IP. A
// successful login is given back once answered (skipSuccessfulRequests), so only failures count.
router.post(
  '/login',
  rateLimit({ limits: ['5/min', { limit: 1, window: '1s', algorithm: 'gcra' }], skipSuccessfulRequests: true }),
  (ctx) => {
    if (ctx.get('authorization') !== DEMO_LOGIN) {
      ctx.status = 401
      ctx.body = { ok: false, failedAttemptsLeftThisMinute: ctx.state.rateLimit?.policies[0]?.remaining }
      return
    }
    ctx.body = { ok: true }
  },
)

// A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
router.get(
  '/api/items',
  rateLimit({
    limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }],
    store: new MemoryStore({ maxKeys: 50_000 }),
    cost: (ctx) => itemsOf(ctx.query.items),
  }),
  (ctx) => {
    const count = itemsOf(ctx.query.items)
    ctx.body = {
      items: Array.from({ length: count }, (_, i) => ({ id: i + 1 })),
      quotaLeft: ctx.state.rateLimit?.remaining,
    }
  },
)

// An expensive report: at most 2 in flight per client; a third concurrent call gets 429 at once.
router.get('/slow', concurrencyLimit({ limit: 2 }), async (ctx) => {
  await new Promise((resolve) => setTimeout(resolve, 2000))
  ctx.body = { report: 'done' }
})

app.use(router.routes()).use(router.allowedMethods())

const port = Number(process.env.PORT ?? 3000)
const server = app.listen(port, () => {
  const url = `http://localhost:${(server.address() as AddressInfo).port}`
  console.log(`sluice Koa example listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)
})
server.on('error', (error: NodeJS.ErrnoException) => failToListen(error, port))

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
