// Type tests: `pnpm typecheck` (tsc over test/) checks every expectTypeOf below; at run time
// vitest only sees that they are no-ops. They hold the types a user gets without reading the source.
import type { Decision, PolicyDecision } from '@sluice/core'
import { ConfigError, createLimiter, ipKey } from '@sluice/core'
import { rateLimit as expressRateLimit, rateLimitOf } from '@sluice/express'
import { rateLimit as honoRateLimit, type RateLimitVariables } from '@sluice/hono'
import { rateLimit as koaRateLimit } from '@sluice/koa'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import { describe, expect, expectTypeOf, it } from 'vitest'

describe('types a user gets without declaring anything', () => {
  it('Express: rateLimitOf(req) after app.use(rateLimit(...))', () => {
    const app = express()
    app.use(expressRateLimit({ limits: ['100/min'] }))
    app.get('/', (req, res) => {
      expectTypeOf(rateLimitOf(req)).toEqualTypeOf<Decision | undefined>()
      res.end()
    })
  })

  it('Koa: ctx.state.rateLimit on a plain new Koa()', () => {
    const app = new Koa()
    app.use(koaRateLimit({ limits: ['100/min'] }))
    app.use((ctx) => {
      expectTypeOf(ctx.state.rateLimit).toEqualTypeOf<Decision | undefined>()
    })
  })

  it("Hono: c.get('rateLimit') and c.var.rateLimit on a plain new Hono()", () => {
    const app = new Hono()
    app.use(honoRateLimit({ limits: ['100/min'] }))
    app.get('/', (c) => {
      expectTypeOf(c.get('rateLimit')).toEqualTypeOf<Decision | undefined>()
      expectTypeOf(c.var.rateLimit).toEqualTypeOf<Decision | undefined>()
      return c.text('ok')
    })
  })

  it('Hono: an app that declares its variables keeps them, rateLimit included', () => {
    const app = new Hono<{ Variables: RateLimitVariables & { user: string } }>()
    app.use(honoRateLimit({ limits: ['100/min'], key: (c) => c.get('user') }))
    app.get('/', (c) => {
      expectTypeOf(c.get('rateLimit')).toEqualTypeOf<Decision | undefined>()
      expectTypeOf(c.get('user')).toEqualTypeOf<string>()
      return c.text('ok')
    })
  })

  it("options' functions receive the framework's own request types", () => {
    expressRateLimit({
      limits: ['1/s'],
      key: (req) => {
        expectTypeOf(req).toEqualTypeOf<express.Request>()
        return req.ip ?? 'unknown'
      },
    })
    koaRateLimit({
      limits: ['1/s'],
      key: (ctx) => {
        expectTypeOf(ctx).toEqualTypeOf<Koa.Context>()
        return ctx.ip
      },
    })
  })

  it("takes the key docs/keys.md shows: a user's id, else ipKey's string | undefined (undefined is keyed by the client IP)", () => {
    type Authed = { user?: { id: string } }
    expressRateLimit({ limits: ['1/s'], key: (req) => (req as express.Request & Authed).user?.id ?? ipKey(req.ip) })
    koaRateLimit({ limits: ['1/s'], key: (ctx) => (ctx.state as Authed).user?.id ?? ipKey(ctx.ip) })
    honoRateLimit({ limits: ['1/s'], key: async (c) => c.req.header('x-user') ?? ipKey(undefined) })
    // What names no client by its type is still refused: null, an object.
    // @ts-expect-error null is not a key
    expressRateLimit({ limits: ['1/s'], key: () => null })
    // @ts-expect-error an object is not a key
    koaRateLimit({ limits: ['1/s'], key: (ctx) => ctx.state })
  })

  it('rejects options from other libraries at compile time, and at run time', () => {
    // @ts-expect-error express-rate-limit's windowMs is not an option: use limits
    expect(() => expressRateLimit({ windowMs: 60_000, limit: 5 })).toThrow(ConfigError)
    // @ts-expect-error a limit is a string like '5/min' or a policy object, not a number
    expect(() => koaRateLimit({ limits: [5] })).toThrow(ConfigError)
  })

  it('decisions have the documented fields', async () => {
    const decision = await createLimiter({ limits: ['2/s'] }).consume('k')
    expectTypeOf(decision.allowed).toEqualTypeOf<boolean>()
    expectTypeOf(decision.remaining).toEqualTypeOf<number>()
    expectTypeOf(decision.retryAfter).toEqualTypeOf<number>()
    expectTypeOf(decision.resetAfter).toEqualTypeOf<number>()
    expectTypeOf(decision.policies).toEqualTypeOf<readonly PolicyDecision[]>()
  })
})
