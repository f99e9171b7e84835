// A Cloudflare Workers module whose limits hold across every isolate and location: the decisions
// are made by RateLimiterObject, a Durable Object (one per client key), through DurableObjectStore.
// `worker.ts` is the same idea with the per-isolate memory store.
import { type DurableObjectNamespaceLike, DurableObjectStore, RateLimiterObject } from '@sluice/cloudflare'
import { createLimiter, type Limiter, type PolicyInput } from '@sluice/core'
import { rateLimit } from '@sluice/hono'
import { Hono } from 'hono'

// The Durable Object class must be exported by the Worker's main module to be bound.
export { RateLimiterObject }

interface Env {
  /** `durable_objects.bindings = [{ name = "LIMITER", class_name = "RateLimiterObject" }]` */
  LIMITER: DurableObjectNamespaceLike
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

/**
 * A limiter on the Durable Object store, made on first use: bindings arrive with each request's
 * `env`, not at module scope, and are the same object for every request of an isolate.
 */
function limiterOn(limits: readonly PolicyInput[]): (env: Env) => Limiter {
  let limiter: Limiter | undefined
  return (env) => {
    limiter ??= createLimiter({ limits: [...limits], store: new DurableObjectStore({ namespace: env.LIMITER }) })
    return limiter
  }
}

const loginLimiter = limiterOn(['5/min', { limit: 1, window: '1s', algorithm: 'gcra' }])
const itemsLimiter = limiterOn([{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }])

const app = new Hono<{ Bindings: Env }>()

app.get('/', (c) =>
  c.json({ hello: 'world', store: 'durable-object', routes: ['POST /login', 'GET /api/items?items=N'] }),
)

// Failed logins only (successes are given back): 5 a minute and 1 a second per client, globally.
app.post('/login', rateLimit({ limiter: (c) => loginLimiter(c.env), skipSuccessfulRequests: true }), (c) =>
  c.req.header('authorization') === DEMO_LOGIN ? c.json({ ok: true }) : c.json({ ok: false }, 401),
)

// 200 items a minute per client: `?items=20` takes 20 units.
const itemsOf = (value: unknown) => {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), 50) : 1
}
app.get(
  '/api/items',
  rateLimit({ limiter: (c) => itemsLimiter(c.env), cost: (c) => itemsOf(c.req.query('items')) }),
  (c) => c.json({ items: itemsOf(c.req.query('items')), quotaLeft: c.get('rateLimit')?.remaining }),
)

export default app
