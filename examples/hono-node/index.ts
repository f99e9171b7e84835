import { serve } from '@hono/node-server'
import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

const app = new Hono()

app.get('/', (c) => c.json({ hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /slow'] }))

// Brute-force protection: 5 attempts a minute and at most 1 a second, per client IP
// (on Node the socket's remote address; X-Forwarded-For is not trusted by default).
app.post('/login', rateLimit({ limits: ['5/min', '1/s'] }), (c) =>
  c.json({ ok: true, attemptsLeftThisMinute: c.get('rateLimit')?.policies[0]?.remaining }),
)

// A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
app.get(
  '/api/items',
  rateLimit({
    limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }],
    store: new MemoryStore({ maxKeys: 50_000 }),
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

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) }, (info) => {
  const url = `http://localhost:${info.port}`
  console.log(`sluice Hono (Node) example listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # the 2nd within a second is 429
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)
})
