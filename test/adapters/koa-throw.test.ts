import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { MemoryStore } from '@sluice/core'
import { rateLimit } from '@sluice/koa'
import Koa from 'koa'
import { describe, expect, it } from 'vitest'

/** Issue 13, defect 9: Koa clears headers on a thrown error; an onLimited that throws keeps them. */
describe('@sluice/koa onLimited that calls ctx.throw', () => {
  it('keeps Retry-After and the rate-limit headers (outer limiters included), and the error’s own headers', async () => {
    const app = new Koa()
    const key = () => 'k'
    app.use(rateLimit({ limits: { limit: 10, window: '1m', name: 'outer' }, key, store: new MemoryStore() }))
    app.use(
      rateLimit({
        limits: { limit: 1, window: '1m', name: 'inner', algorithm: 'fixed-window' },
        key,
        store: new MemoryStore({ now: () => 1_700_000_000_000 }),
        onLimited: (ctx) => ctx.throw(429, 'slow down', { headers: { 'X-Reason': 'limited' } }),
      }),
    )
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const server = createServer(app.callback())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    try {
      expect((await fetch(url)).status).toBe(200)
      const denied = await fetch(url)
      expect(denied.status).toBe(429)
      expect(await denied.text()).toBe('slow down')
      expect(denied.headers.get('retry-after')).toBe('40')
      expect(denied.headers.get('x-reason')).toBe('limited')
      expect(denied.headers.get('ratelimit-policy')).toBe('"outer";q=10;w=60, "inner";q=1;w=60')
      expect(denied.headers.get('ratelimit')).toMatch(/^"outer";r=\d+;t=\d+, "inner";r=0;t=40$/)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
