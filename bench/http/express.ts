// Express hello world for the HTTP benchmark, in its own process:
//   node --import tsx --conditions=source bench/http/express.ts <variant>
import type { AddressInfo } from 'node:net'
import { rateLimit } from '@sluice/express'
import express, { type RequestHandler } from 'express'
import { rateLimit as expressRateLimit } from 'express-rate-limit'
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

const variant = variantArg('express')
const limits = limitsFor(variant)
const middleware: RequestHandler[] = []
// The references call next() a microtask later, as every asynchronous middleware (a limiter) does.
if (variant === 'noop') {
  middleware.push((_req, _res, next) => queueMicrotask(next))
} else if (variant === 'headers') {
  middleware.push((_req, res, next) => {
    for (const [name, value] of CONSTANT_HEADERS) res.setHeader(name, value)
    queueMicrotask(next)
  })
} else if (variant === 'headers-prop') {
  const decision = { allowed: true, limit: 1_000_000, remaining: 999_999, resetAfter: 60_000 }
  middleware.push((req, res, next) => {
    for (const [name, value] of CONSTANT_HEADERS) res.setHeader(name, value)
    ;(req as unknown as Record<string, unknown>).rateLimit = decision
    queueMicrotask(next)
  })
} else if (isSluice(variant)) {
  middleware.push(rateLimit({ limits, headers: headersFor(variant), key: (req) => req.get(CLIENT_HEADER) ?? '' }))
} else if (variant === 'erl-1' || variant === 'erl-2') {
  // express-rate-limit takes one window per instance: one per policy, chained, as its users do.
  for (const { limit, window } of limits) {
    middleware.push(
      expressRateLimit({
        windowMs: window,
        limit,
        keyGenerator: (req) => req.get(CLIENT_HEADER) ?? '',
        standardHeaders: 'draft-8',
        legacyHeaders: false,
      }),
    )
  }
}

const app = express()
app.get('/', ...middleware, (_req, res) => {
  res.send(BODY)
})
const server = app.listen(0, () => listening((server.address() as AddressInfo).port))
