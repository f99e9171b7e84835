import { readFileSync } from 'node:fs'
import { MemoryStore } from '@sluice/core'
import { clientAddress, concurrencyLimit, type RateLimitVariables, rateLimit } from '@sluice/hono'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'

function app(options: Parameters<typeof rateLimit>[0]) {
  const hono = new Hono<{ Variables: RateLimitVariables }>()
  hono.onError((error, c) => c.json({ error: error.name, message: error.message }, 500))
  hono.get('/', rateLimit(options), (c) => c.json({ key: c.get('rateLimit')?.key ?? null }))
  return hono
}

describe('@sluice/hono client address', () => {
  it('fails with a ClientAddressError when the runtime gives no connection info', async () => {
    const res = await app({ limits: '1/min' }).request('/')
    expect(res.status).toBe(500)
    expect(await res.json()).toMatchObject({
      error: 'ClientAddressError',
      message: expect.stringMatching(/runtime's connection info is undefined.*Pass a key function/),
    })
  })

  it('never trusts cf-connecting-ip or X-Forwarded-For off Cloudflare', async () => {
    const env = { incoming: { socket: { remoteAddress: '::ffff:192.0.2.10' } } }
    const headers = { 'cf-connecting-ip': '6.6.6.6', 'x-forwarded-for': '7.7.7.7' }
    const res = await app({ limits: '1/min' }).request('/', { headers }, env)
    expect(await res.json()).toEqual({ key: '192.0.2.10' })
    const bare = await app({ limits: '1/min' }).request('/', { headers })
    expect(bare.status).toBe(500)
  })

  it("reads cf-connecting-ip on Cloudflare's runtime (a request carrying cf properties)", async () => {
    const request = new Request('http://worker/', { headers: { 'cf-connecting-ip': '2001:db8:1:2::3' } })
    Object.defineProperty(request, 'cf', { value: { colo: 'AMS' } })
    const res = await app({ limits: '1/min' }).fetch(request)
    expect(await res.json()).toEqual({ key: '2001:db8:1::/56' })
  })

  it('reads Deno and Bun connection info', async () => {
    const deno = await app({ limits: '1/min' }).request('/', {}, { remoteAddr: { hostname: '192.0.2.1' } })
    expect(await deno.json()).toEqual({ key: '192.0.2.1' })
    const bun = { requestIP: () => ({ address: '192.0.2.2' }) }
    expect(await (await app({ limits: '1/min' }).request('/', {}, bun)).json()).toEqual({ key: '192.0.2.2' })
  })

  it('uses an injected getConnInfo', async () => {
    const getConnInfo = () => ({ remote: { address: '198.51.100.4' } })
    const res = await app({ limits: '1/min', getConnInfo }).request('/')
    expect(await res.json()).toEqual({ key: '198.51.100.4' })
    expect(clientAddress).toBeTypeOf('function')
  })
})

describe('@sluice/hono responses', () => {
  it('adds headers to a raw Response returned by onLimited', async () => {
    const hono = new Hono()
    const store = new MemoryStore({ now: () => 1_800_000_000_000 })
    hono.get(
      '/',
      rateLimit({ limits: '1/min', store, key: () => 'k', onLimited: () => new Response('nope', { status: 429 }) }),
      () => new Response('ok'),
    )
    expect((await hono.request('/')).headers.get('ratelimit')).toBe('"1-per-1m";r=0;t=66')
    const denied = await hono.request('/')
    expect(await denied.text()).toBe('nope')
    expect(denied.headers.get('retry-after')).toBe('66')
  })

  it('fails with an error naming onLimited when it returns something other than a Response', async () => {
    for (const value of ['nope', { status: 429 }]) {
      const hono = new Hono()
      hono.onError((error, c) => c.json({ error: error.name, message: error.message }, 500))
      const onLimited = (() => value) as never
      hono.get('/', rateLimit({ limits: '1/min', key: () => 'k', onLimited }), (c) => c.text('ok'))
      expect((await hono.request('/')).status).toBe(200)
      const denied = await hono.request('/')
      expect(denied.status).toBe(500)
      expect(await denied.json()).toMatchObject({
        error: 'ConfigError',
        message: expect.stringMatching(/^onLimited must return a Response.*, got /),
      })
    }
  })

  it('sends the default denial when onLimited returns nothing, as Express and Koa do (issue 13)', async () => {
    const hono = new Hono()
    const onLimited = (() => undefined) as never
    hono.get('/', rateLimit({ limits: '1/min', key: () => 'k', onLimited }), (c) => c.text('ok'))
    expect((await hono.request('/')).status).toBe(200)
    const denied = await hono.request('/')
    expect(denied.status).toBe(429)
    expect(denied.headers.get('content-type')).toBe('application/problem+json')
    expect(denied.headers.get('retry-after')).not.toBeNull()
    const busy = new Hono()
    const limit = concurrencyLimit({ limit: 1, key: () => 'k', onLimited })
    busy.get('/', limit, (c) => c.text('done'))
    const first = await busy.request('/')
    const refused = await busy.request('/')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('1')
    await first.text()
  })

  it('holds a concurrency slot until an app.request() body is read', async () => {
    const hono = new Hono()
    hono.get('/', concurrencyLimit({ limit: 1, key: () => 'k' }), (c) => c.text('done'))
    const first = await hono.request('/')
    expect((await hono.request('/')).status).toBe(429)
    expect(await first.text()).toBe('done')
    expect((await hono.request('/')).status).toBe(200)
  })

  it('imports nothing from node: (it must run on workerd)', () => {
    const source = readFileSync(new URL('../../packages/hono/src/index.ts', import.meta.url), 'utf8')
    expect(source).not.toMatch(/from ['"]node:/)
    for (const file of [
      'client-ip',
      'headers',
      'common-options',
      'problem',
      'rate-limit',
      'concurrency',
      'response',
      'stream',
    ]) {
      const core = readFileSync(new URL(`../../packages/core/src/http/${file}.ts`, import.meta.url), 'utf8')
      expect(core, file).not.toMatch(/from ['"]node:/)
    }
  })
})
