// admissionControl() from @sluice/hono inside workerd (Miniflare, offline), memory only.
import { fileURLToPath } from 'node:url'
import { THROTTLING_MODE } from '@sluice/core'
import type { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NodeImport, startWorker } from './workerd.js'

const entry = fileURLToPath(new URL('./fixture/admission-worker.ts', import.meta.url))
let nodeImports: NodeImport[] = []
let mf: Miniflare

beforeAll(async () => {
  ;({ mf, nodeImports } = await startWorker(entry))
}, 60_000)

afterAll(async () => {
  await mf?.dispose()
})

async function get(path: string, token?: string) {
  const response = await mf.dispatchFetch(`http://worker.test${path}`, {
    headers: token === undefined ? {} : { authorization: token },
  })
  return { status: response.status, headers: response.headers, body: JSON.parse(await response.text()) }
}

describe('admissionControl in workerd', () => {
  it('bundles with no Node built-in and no timer or random number at module scope', async () => {
    expect(nodeImports.map((i) => i.path)).toEqual([])
    expect((await get('/module-scope-calls')).body).toEqual([])
  })

  it('serves known clients and refuses new ones in throttling mode', async () => {
    for (const token of ['a', 'b', 'c']) expect((await get('/game', token)).status).toBe(200)
    expect((await get('/game', 'a')).body.admission).toEqual({ throttling: true, active: 3, known: true })
    const refused = await get('/game', 'newcomer')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(refused.body).toMatchObject({ type: THROTTLING_MODE, status: 429 })
    expect((await get('/game', 'newcomer')).status).toBe(429)
  })
})
