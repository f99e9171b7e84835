// Hono (on @hono/node-server) hello world for the HTTP benchmark, in its own process:
//   node --import tsx --conditions=source bench/http/hono.ts <variant>
import { type HttpBindings, serve } from '@hono/node-server'
import { rateLimit } from '@sluice/hono'
import { type Context, Hono } from 'hono'
import { rateLimiter } from 'hono-rate-limiter'
import {
  BODY,
  CLIENT_HEADER,
  CONSTANT_HEADERS,
  headersFor,
  isSluice,
  limitsFor,
  listening,
  variantArg,
} from './config.js'

const variant = variantArg('hono')
const app = new Hono()
// The limiters' key, from Node's parsed headers: c.req.header() would make @hono/node-server build
// the request's whole Headers object, a cost of this key function and not of the limiter (the
// default key, the socket's address, reads no header at all).
const clientId = (c: Context) => String((c.env as HttpBindings).incoming.headers[CLIENT_HEADER] ?? '')
if (variant === 'noop') {
  app.use(async (_c, next) => {
    await next()
  })
} else if (variant === 'headers') {
  app.use(async (c, next) => {
    for (const [name, value] of CONSTANT_HEADERS) c.header(name, value)
    await next()
  })
} else if (isSluice(variant)) {
  app.use(
    rateLimit({
      limits: limitsFor(variant),
      headers: headersFor(variant),
      key: clientId,
    }),
  )
} else if (variant === 'hrl-1' || variant === 'hrl-2') {
  // hono-rate-limiter takes one window per instance: one per policy, chained, each with its
  // default memory store; draft-7 headers, its pair closest to sluice's draft-11 pair.
  for (const { limit, window } of limitsFor(variant)) {
    app.use(rateLimiter({ windowMs: window, limit, keyGenerator: clientId, standardHeaders: 'draft-7' }))
  }
}
app.get('/', (c) => c.text(BODY))
serve({ fetch: app.fetch, port: 0 }, (info) => listening(info.port))
