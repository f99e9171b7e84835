import { MemoryStore } from '@sluice/core'
import { concurrencyLimit, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'

/** The member names of a structured-field list header. */
const members = (value: string | null) => (value ?? '').split(', ').map((m) => m.split(';')[0])
const key = () => 'k'

/** Issue 13, defect 2: stacked Hono middlewares keep every member whatever Response the handler builds. */
describe('@sluice/hono stacked limiters and hand-built Responses', () => {
  const outer = () => rateLimit({ limits: { limit: 10, window: '1m', name: 'outer' }, key, store: new MemoryStore() })
  const inner = () => rateLimit({ limits: { limit: 5, window: '1m', name: 'inner' }, key, store: new MemoryStore() })

  it.each([
    ['c.text', (c: { text(t: string): Response }) => c.text('ok')],
    ['new Response', () => new Response('raw')],
  ])('two rate limits, handler with %s: both members in both headers', async (_, handler) => {
    const app = new Hono()
    app.use(outer())
    app.use(inner())
    app.get('/', handler as never)
    const res = await app.request('/')
    expect(res.status).toBe(200)
    expect(members(res.headers.get('RateLimit-Policy'))).toEqual(['"outer"', '"inner"'])
    expect(members(res.headers.get('RateLimit'))).toEqual(['"outer"', '"inner"'])
  })

  it('concurrencyLimit outside a rateLimit, raw Response: both members', async () => {
    const app = new Hono()
    app.use(concurrencyLimit({ limit: 2, key, name: 'inflight' }))
    app.use(inner())
    app.get('/', () => new Response('raw'))
    const res = await app.request('/')
    expect(members(res.headers.get('RateLimit-Policy'))).toEqual(['"inflight"', '"inner"'])
    expect(members(res.headers.get('RateLimit'))).toEqual(['"inflight"', '"inner"'])
  })

  it('onLimited returning a Response under an admitting outer limiter: both members, and Retry-After', async () => {
    const app = new Hono()
    app.use(outer())
    app.use(
      rateLimit({
        limits: { limit: 1, window: '1m', name: 'inner' },
        key,
        onLimited: () => new Response('slow down', { status: 429 }),
      }),
    )
    app.get('/', (c) => c.text('ok'))
    await app.request('/')
    const res = await app.request('/')
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('Retry-After'))).toBeGreaterThan(0)
    expect(members(res.headers.get('RateLimit-Policy'))).toEqual(['"outer"', '"inner"'])
    expect(members(res.headers.get('RateLimit'))).toEqual(['"outer"', '"inner"'])
  })

  it('a handler that sets its own RateLimit: RateLimit and RateLimit-Policy still describe the same policies', async () => {
    const app = new Hono()
    app.use(outer())
    app.use(inner())
    app.get('/', () => new Response('raw', { headers: { RateLimit: '"upstream";r=3;t=9' } }))
    const res = await app.request('/')
    const policy = members(res.headers.get('RateLimit-Policy'))
    const state = members(res.headers.get('RateLimit')).filter((m) => m !== '"upstream"')
    expect(policy).toEqual(['"outer"', '"inner"'])
    expect(state).toEqual(policy)
  })
})
