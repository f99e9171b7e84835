// An app migrating route by route keeps express-rate-limit on some routes and @sluice/express on
// others: both compile together under strict TS (`pnpm typecheck` checks this file), and at run
// time each library's route reads its own decision.
import { rateLimit, rateLimitOf } from '@sluice/express'
import express from 'express'
import { type AugmentedRequest, rateLimit as expressRateLimit, type RateLimitInfo } from 'express-rate-limit'
import request from 'supertest'
import { describe, expect, expectTypeOf, it } from 'vitest'

function app() {
  const server = express()
  server.get('/old', expressRateLimit({ windowMs: 60_000, limit: 10 }), (req, res) => {
    const info = (req as AugmentedRequest).rateLimit
    expectTypeOf(info).toEqualTypeOf<RateLimitInfo | undefined>() // an index signature: strict TS adds undefined
    res.json({ used: info?.used, resetTime: info?.resetTime?.toISOString() ?? null })
  })
  server.get('/new', rateLimit({ limits: ['10/min'], key: () => 'client' }), (req, res) => {
    const decision = rateLimitOf(req)
    // express-rate-limit's fields, from the decision: what the migration guide shows.
    const used = decision === undefined ? 0 : decision.limit - decision.remaining
    const resetTime = decision === undefined ? undefined : new Date(Date.now() + decision.resetAfter)
    res.json({ used, resetTime: resetTime?.toISOString() ?? null })
  })
  return server
}

describe('express-rate-limit and @sluice/express in one app', () => {
  it('each route reads its own library decision, used and resetTime alike', async () => {
    const server = app()
    await request(server).get('/old')
    const old = await request(server).get('/old')
    expect(old.body.used).toBe(2)
    expect(Date.parse(old.body.resetTime)).toBeGreaterThan(Date.now())
    await request(server).get('/new')
    const migrated = await request(server).get('/new')
    expect(migrated.body.used).toBe(2)
    expect(Date.parse(migrated.body.resetTime)).toBeGreaterThan(Date.now())
  })
})
