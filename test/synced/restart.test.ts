import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createLimiter } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { bundled } from '../support/bundle.js'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'
import { countOf, totalsInRedis } from './fleet.js'

const run = promisify(execFile)
const WORKER = fileURLToPath(new URL('./restart-worker.ts', import.meta.url))
const privateRedis = await privateRedisAvailable()

/** A fixed window long enough that three starts fit in one; a run that straddles its turn is run again. */
const WINDOW = 3_600_000
const LIMIT = 100

/**
 * Issue 40, item 1: a process restarted under the same `nodeId` (`os.hostname()`: a StatefulSet
 * pod, a PM2 process, a VM) within a window. Its running totals start again from 0; under the
 * same fields in Redis they would count only once past the old ones, so the restart admitted the
 * window's counts again (60 + 60 of 100).
 */
describe.skipIf(!privateRedis)('SyncedStore restarted under the same nodeId', { timeout: 120_000 }, () => {
  let server: RedisServer
  let client: Redis
  beforeAll(async () => {
    server = await startRedisServer()
    client = new Redis(server.url)
  })
  afterAll(async () => {
    client?.disconnect()
    await server?.stop()
  })

  const start = async (prefix: string, count: number) => {
    const plan = { url: server.url, prefix, nodeId: 'web-1', limit: LIMIT, window: WINDOW, count, gap: 5 }
    const { stdout } = await run(process.execPath, [await bundled(WORKER), JSON.stringify(plan)])
    return JSON.parse(stdout) as { admitted: number; nodeId: string }
  }

  it('admits the limit once in a window over restarts: each start counts under fields of its own', async () => {
    for (let attempt = 0; ; attempt++) {
      const prefix = `restart-${attempt}:`
      const windowAt = (t: number) => Math.floor(t / WINDOW)
      const began = Date.now()
      const first = await start(prefix, 60)
      const second = await start(prefix, 60)
      const third = await start(prefix, 60)
      if (windowAt(Date.now()) !== windowAt(began) && attempt === 0) continue
      expect(first.admitted).toBe(60)
      // The restart reads the 60 in Redis: 40 more. The next one reads the hot keys before its
      // first request (it has not heard of the key): the key, spent, was announced hot, so that
      // request is decided exactly, and the rest on the full count.
      expect([second.admitted, third.admitted]).toEqual([40, 0])
      // What an operator sees in Redis: one set of fields per start, named by the id given.
      expect(new Set([first.nodeId, second.nodeId, third.nodeId]).size).toBe(3)
      for (const { nodeId } of [first, second, third]) expect(nodeId).toMatch(/^web-1@[0-9a-z]+\.[0-9a-f]{8}$/)
      const [hash] = [...((await totalsInRedis(client, prefix)).get('hot')?.values() ?? [])]
      expect(countOf(hash ?? {})).toBe(100)
      expect(hash).toMatchObject({
        [`a:${first.nodeId}`]: expect.any(Number),
        [`a:${second.nodeId}`]: expect.any(Number),
      })
      return
    }
  })

  it('two stores given one nodeId at once are two nodes', async () => {
    const prefix = 'same-name:'
    const [a, b] = [0, 1].map(() => new SyncedStore({ client, prefix, nodeId: 'web-1', interval: 50 }))
    try {
      expect(a?.nodeId).not.toBe(b?.nodeId)
      // The sync loop (and its heartbeats) starts with a store's first request.
      for (const store of [a, b]) void createLimiter({ limits: '10/min', store }).consume('k')
      // Each sees the other once their heartbeats (the first three within an interval) are in.
      await vi.waitFor(() => expect([a?.liveNodes, b?.liveNodes]).toEqual([2, 2]), { timeout: 10_000, interval: 20 })
    } finally {
      await Promise.all([a?.close(), b?.close()])
    }
  })
})
