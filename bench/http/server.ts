// One hello-world server for the HTTP benchmark, run in its own process:
//   node --import tsx --conditions=source bench/http/server.ts <framework> <variant>
// It listens on an OS-chosen port and prints `listening <port>`.
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { rateLimit as expressLimit } from '@sluice/express'
import { rateLimit as honoLimit } from '@sluice/hono'
import { rateLimit as koaLimit } from '@sluice/koa'
import express, { type RequestHandler } from 'express'
import { rateLimit as expressRateLimit } from 'express-rate-limit'
import { Hono, type MiddlewareHandler } from 'hono'
import Koa from 'koa'
import { CLIENT_HEADER, type Framework, LIMITS, POLICY_COUNT, parseTarget, type Variant } from './config.js'

const { framework, variant } = parseTarget(process.argv.slice(2))

const limits = LIMITS.slice(0, POLICY_COUNT[variant])
const body = 'Hello, world!'

function listening(port: number): void {
  console.log(`listening ${port}`)
}

function startExpress(v: Variant): void {
  const app = express()
  const middleware: RequestHandler[] = []
  if (v.startsWith('sluice')) {
    middleware.push(expressLimit({ limits, key: (req) => req.get(CLIENT_HEADER) ?? '' }))
  } else if (v.startsWith('erl')) {
    // express-rate-limit takes one window per instance: chain one per policy, as its users do.
    for (const policy of limits) {
      middleware.push(
        expressRateLimit({
          windowMs: policy.window,
          limit: policy.limit,
          keyGenerator: (req) => req.get(CLIENT_HEADER) ?? '',
          standardHeaders: 'draft-8',
          legacyHeaders: false,
        }),
      )
    }
  }
  app.get('/', ...middleware, (_req, res) => {
    res.send(body)
  })
  const server = app.listen(0, () => listening((server.address() as AddressInfo).port))
}

function startKoa(v: Variant): void {
  const app = new Koa()
  if (v !== 'none') app.use(koaLimit({ limits, key: (ctx) => ctx.get(CLIENT_HEADER) }))
  app.use((ctx) => {
    ctx.body = body
  })
  const server = app.listen(0, () => listening((server.address() as AddressInfo).port))
}

function startHono(v: Variant): void {
  const app = new Hono()
  const middleware: MiddlewareHandler[] = []
  if (v !== 'none') middleware.push(honoLimit({ limits, key: (c) => c.req.header(CLIENT_HEADER) ?? '' }))
  app.get('/', ...middleware, (c) => c.text(body))
  serve({ fetch: app.fetch, port: 0 }, (info) => listening(info.port))
}

const starters: Record<Framework, (v: Variant) => void> = { express: startExpress, koa: startKoa, hono: startHono }
starters[framework](variant)
