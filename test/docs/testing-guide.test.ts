// The examples of docs/testing.md, as written there: if one stops working, the guide is wrong.
import { createLimiter, MemoryStore } from '@sluice/core'
import { rateLimit } from '@sluice/hono'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'

describe('docs/testing.md', () => {
  it('admits two a second, then tells the client when to come back', async () => {
    let now = Date.UTC(2026, 0, 1) // any fixed instant: windows are aligned to the clock
    const app = new Hono()
    app.use(rateLimit({ limits: ['2/s'], store: new MemoryStore({ now: () => now }), key: () => 'test' }))
    app.get('/', (c) => c.text('ok'))

    expect((await app.request('/')).status).toBe(200)
    expect((await app.request('/')).status).toBe(200)
    const denied = await app.request('/')
    expect(denied.status).toBe(429)
    // The sliding window weighs the previous second's two requests: half of them are gone after 1.5 s.
    expect(denied.headers.get('retry-after')).toBe('2')

    now += 1500 // later, without waiting
    expect((await app.request('/')).status).toBe(200)
  })

  it('without a key, app.request (no connection) fails with an error that says to pass key', async () => {
    const app = new Hono()
    app.use(rateLimit({ limits: ['2/s'] }))
    app.get('/', (c) => c.text('ok'))
    let error: unknown
    app.onError((err, c) => {
      error = err
      return c.text('error', 500)
    })
    expect((await app.request('/')).status).toBe(500)
    expect(String(error)).toMatch(/key/)
  })

  it('tests the limiter alone', async () => {
    const now = Date.UTC(2026, 0, 1)
    const limiter = createLimiter({ limits: ['2/s', '5/min'], store: new MemoryStore({ now: () => now }) })
    const d = await limiter.consume('user:1')
    expect(d).toMatchObject({ allowed: true, remaining: 1 })
    expect(d.policies.map((p) => p.remaining)).toEqual([1, 4])
  })
})
