// @sluice/hono on the Workers runtime: the fixture worker is bundled the way Wrangler would
// (esbuild, ESM, no Node built-ins) and run in workerd through Miniflare, offline.
import { fileURLToPath } from 'node:url'
import type { Metafile } from 'esbuild'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NodeImport, startWorker } from './workerd.js'

const entry = fileURLToPath(new URL('./fixture/worker.ts', import.meta.url))

let metafile: Metafile
let nodeImports: NodeImport[] = []
let mf: Miniflare

beforeAll(async () => {
  ;({ mf, metafile, nodeImports } = await startWorker(entry))
}, 60_000)

afterAll(async () => {
  await mf?.dispose()
})

async function get(path: string, headers: Record<string, string> = {}) {
  const response = await mf.dispatchFetch(`http://worker.test${path}`, { headers })
  return { status: response.status, headers: response.headers, body: await response.text() }
}

describe('@sluice/hono in workerd', () => {
  it('bundles @sluice/core and @sluice/hono from source with no Node built-in imports', () => {
    const inputs = Object.keys(metafile.inputs)
    expect(inputs.some((file) => file.includes('packages/core/src/'))).toBe(true)
    expect(inputs.some((file) => file.includes('packages/hono/src/'))).toBe(true)
    expect(nodeImports).toEqual([])
  })

  it('runs no timer and draws no random number at module scope', async () => {
    // workerd already refuses to start a script that does either at global scope; the probe
    // imported first by the fixture also records any such call explicitly.
    const response = await get('/module-scope-calls')
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body)).toEqual([])
  })

  it('admits up to the limit, then answers 429 with the draft-11 headers and a problem body', async () => {
    const client = { 'cf-connecting-ip': '203.0.113.10' }
    for (let i = 0; i < 3; i++) {
      const ok = await get('/limited', client)
      expect(ok.status).toBe(200)
      expect(ok.headers.get('ratelimit')).toMatch(
        new RegExp(`^"3-per-1m";r=${2 - i};t=\\d+, "10-per-1s";r=\\d+;t=\\d+$`),
      )
    }
    const denied = await get('/limited', client)
    expect(denied.status).toBe(429)
    expect(denied.headers.get('ratelimit-policy')).toBe('"3-per-1m";q=3;w=60, "10-per-1s";q=10;w=1')
    expect(denied.headers.get('ratelimit')).toMatch(/^"3-per-1m";r=0;t=\d+, "10-per-1s";r=\d+;t=\d+$/)
    const retryAfter = Number(denied.headers.get('retry-after'))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    // Sliding window, real clock: the rest of this minute, then a third of the next one.
    expect(retryAfter).toBeLessThanOrEqual(80)
    expect(denied.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(JSON.parse(denied.body)).toMatchObject({ status: 429 })
  })

  it('keys clients by CF-Connecting-IP and ignores X-Forwarded-For', async () => {
    const first = await get('/limited', { 'cf-connecting-ip': '198.51.100.7' })
    expect(first.status).toBe(200)
    expect(JSON.parse(first.body).key).toContain('198.51.100.7')

    // Forged X-Forwarded-For values do not make a limited client look new.
    for (let i = 0; i < 2; i++) expect((await get('/limited', { 'cf-connecting-ip': '198.51.100.7' })).status).toBe(200)
    const forged = await get('/limited', { 'cf-connecting-ip': '198.51.100.7', 'x-forwarded-for': '192.0.2.99' })
    expect(forged.status).toBe(429)

    // Another address has its own quota.
    const other = await get('/limited', { 'cf-connecting-ip': '198.51.100.8' })
    expect(other.status).toBe(200)
    expect(JSON.parse(other.body).key).toContain('198.51.100.8')
  })

  it('groups IPv6 clients by their /56 subnet', async () => {
    const a = await get('/limited', { 'cf-connecting-ip': '2001:db8:abcd:1200::1' })
    const b = await get('/limited', { 'cf-connecting-ip': '2001:db8:abcd:12ff:ffff::2' })
    const c = await get('/limited', { 'cf-connecting-ip': '2001:db8:abcd:1300::1' })
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200])
    expect(JSON.parse(a.body).key).toBe(JSON.parse(b.body).key)
    expect(JSON.parse(c.body).key).not.toBe(JSON.parse(a.body).key)
  })

  it('lets one request per key in flight under concurrencyLimit and frees the slot when it ends', async () => {
    const client = { 'cf-connecting-ip': '203.0.113.20' }
    // Whichever arrives first holds the slot for 400 ms; the other arrives meanwhile.
    const [first, second] = await Promise.all([get('/slow?ms=400', client), get('/slow?ms=400', client)])
    expect([first.status, second.status].sort()).toEqual([200, 429])
    expect((await get('/slow?ms=0', client)).status).toBe(200)
    // A different client was never blocked by the first one's slot.
    expect((await get('/slow?ms=0', { 'cf-connecting-ip': '203.0.113.21' })).status).toBe(200)
  })
})
