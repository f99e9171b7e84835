import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// One app for two runtimes: `index.ts` serves it on Node, `examples/hono-worker` runs it in workerd.
// So: no `node:` imports, and nothing at module scope may start a timer or draw random numbers
// (workerd refuses to load such a script). Creating limiters and stores here is fine: they start
// nothing until the first request.

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth; a real app checks a password hash. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

const app = new Hono()

app.get('/', (c) => c.json({ hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /slow'] }))

// Brute-force protection: 5 failed attempts a minute and at most 1 a second, per client IP as the
// runtime reports it (the socket on Node, CF-Connecting-IP on Workers; X-Forwarded-For is never
// trusted by default). A successful login is given back (skipSuccessfulRequests): only failures count.
app.post(
  '/login',
  rateLimit({ limits: ['5/min', { limit: 1, window: '1s', algorithm: 'gcra' }], skipSuccessfulRequests: true }),
  (c) => {
    if (c.req.header('authorization') !== DEMO_LOGIN) {
      return c.json({ ok: false, failedAttemptsLeftThisMinute: c.get('rateLimit')?.policies[0]?.remaining }, 401)
    }
    return c.json({ ok: true })
  },
)

// A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
app.get(
  '/api/items',
  rateLimit({
    limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }],
    store: new MemoryStore({ maxKeys: 10_000 }),
    cost: (c) => itemsOf(c.req.query('items')),
  }),
  (c) => {
    const count = itemsOf(c.req.query('items'))
    return c.json({
      items: Array.from({ length: count }, (_, i) => ({ id: i + 1 })),
      quotaLeft: c.get('rateLimit')?.remaining,
    })
  },
)

// An expensive report: at most 2 in flight per client; a third concurrent call gets 429 at once.
app.get('/slow', concurrencyLimit({ limit: 2 }), async (c) => {
  await new Promise((resolve) => setTimeout(resolve, 2000))
  return c.json({ report: 'done' })
})

export default app
