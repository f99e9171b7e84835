// Koa hello world for the HTTP benchmark, in its own process:
//   node --import tsx --conditions=source bench/http/koa.ts <variant>
import type { AddressInfo } from 'node:net'
import { rateLimit } from '@sluice/koa'
import Koa from 'koa'
import koaRateLimit from 'koa-ratelimit'
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

const variant = variantArg('koa')
const app = new Koa()
if (variant === 'noop') {
  app.use(async (_ctx, next) => next())
} else if (variant === 'headers') {
  app.use(async (ctx, next) => {
    for (const [name, value] of CONSTANT_HEADERS) ctx.set(name, value)
    return next()
  })
} else if (isSluice(variant)) {
  app.use(rateLimit({ limits: limitsFor(variant), headers: headersFor(variant), key: (ctx) => ctx.get(CLIENT_HEADER) }))
} else if (variant === 'krl-1' || variant === 'krl-2') {
  // koa-ratelimit takes one window per instance: one per policy, chained, each with its own Map.
  // It always sends its three X-RateLimit-* headers; it has no standard ones.
  for (const { limit, window } of limitsFor(variant)) {
    app.use(
      koaRateLimit({
        driver: 'memory',
        db: new Map(),
        duration: window,
        max: limit,
        id: (ctx) => ctx.get(CLIENT_HEADER),
      }),
    )
  }
}
app.use((ctx) => {
  ctx.body = BODY
})
const server = app.listen(0, () => listening((server.address() as AddressInfo).port))
