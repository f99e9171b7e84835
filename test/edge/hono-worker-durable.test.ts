// examples/hono-worker with its Durable Object configuration, bundled as Wrangler would and run in
// workerd with the RateLimiterObject binding, offline.
import { fileURLToPath } from 'node:url'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Bundle, bundleWorker, serveWorker } from './workerd.js'

const entry = fileURLToPath(new URL('../../examples/hono-worker/durable-worker.ts', import.meta.url))
let bundle: Bundle
let mf: Miniflare

beforeAll(async () => {
  bundle = await bundleWorker(entry)
  mf = await serveWorker(bundle.script, { durableObjects: { LIMITER: 'RateLimiterObject' } })
}, 60_000)

afterAll(async () => {
  await mf?.dispose()
})

type Init = { method?: string; headers?: Record<string, string> }

async function request(path: string, init: Init = {}, ip = '203.0.113.5') {
  const response = await mf.dispatchFetch(`http://worker.test${path}`, {
    method: init.method ?? 'GET',
    headers: { 'cf-connecting-ip': ip, ...init.headers },
  })
  return { status: response.status, headers: response.headers, body: await response.text() }
}

describe('examples/hono-worker on Durable Objects', () => {
  it('bundles with no Node built-in', () => {
    expect(bundle.nodeImports).toEqual([])
  })

  it('limits failed logins, gives successful ones back, and keeps clients apart', async () => {
    const ok = { method: 'POST', headers: { authorization: `Basic ${btoa('demo:sluice')}` } }
    for (let i = 0; i < 3; i++) expect((await request('/login', ok)).status).toBe(200)
    expect((await request('/login', { method: 'POST' })).status).toBe(401)
    const denied = await request('/login', { method: 'POST' })
    expect(denied.status).toBe(429)
    expect(denied.headers.get('ratelimit')).toMatch(/^"5-per-1m";r=4;t=\d+, "1-per-1s";r=0;t=\d+$/)
    expect((await request('/login', { method: 'POST' }, '203.0.113.6')).status).toBe(401)
  })

  it('takes each call’s cost from the token bucket', async () => {
    // The object decides on workerd's clock: 200 a minute drips a unit back every 300 ms, so a
    // slow machine may see what dripped in since the first call, never more.
    const started = Date.now()
    for (let left = 160; left >= 0; left -= 40) {
      const response = await request('/api/items?items=40')
      expect(response.status).toBe(200)
      const dripped = Math.floor((Date.now() - started) / 300)
      const { quotaLeft } = JSON.parse(response.body)
      expect(quotaLeft).toBeGreaterThanOrEqual(left)
      expect(quotaLeft).toBeLessThanOrEqual(left + dripped)
    }
    expect((await request('/api/items?items=40')).status).toBe(429)
  })
})
