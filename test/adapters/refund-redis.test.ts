// skipSuccessfulRequests against a real Redis, through every adapter: the refund script runs
// after the response and the count kept in Redis is what the limit enforces.
import { createLimiter, parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'
import { until } from '../support/wait.js'
import { harnesses } from './harness.js'
import { nestHarnesses } from './nest-harness.js'

const redis = await findRedis()

describe.skipIf(redis === undefined)('skipSuccessfulRequests on a RedisStore', () => {
  const client = new Redis(redis?.url ?? '')
  afterAll(async () => {
    client.disconnect()
    await redis?.stop()
  })

  it.each([...harnesses, ...nestHarnesses].map((h) => [h.name, h] as const))('@sluice/%s', async (_, h) => {
    const limits = [{ limit: 2, window: '1h', algorithm: 'fixed-window' as const }]
    // A fixed clock: the refund must land in the window that took the request.
    const now = () => 1_800_000_000_000
    const store = new RedisStore({ client, prefix: uniquePrefix(`refund-${h.name}`), now })
    const limiter = createLimiter({ limits, store })
    const [stateKey] = store.keysOf('127.0.0.1', parsePolicies(limits))
    /** The fixed window's count as Redis holds it: the second double of the state. */
    const countInRedis = async () => (await client.getBuffer(stateKey as string))?.readDoubleLE(8)
    const settledAt = (count: number) =>
      until(countInRedis, { done: (c) => c === count, what: `a count of ${count} in Redis` })
    const app = await h.app({
      use: [h.rateLimit({ limiter, skipSuccessfulRequests: true })],
      routes: [{ path: '/ok' }, { path: '/wrong', handler: { status: 401 } }],
    })
    try {
      for (let i = 0; i < 4; i++) {
        expect((await app.get('/ok')).status).toBe(200)
        await settledAt(0)
      }
      expect((await app.get('/wrong')).status).toBe(401)
      expect((await app.get('/wrong')).status).toBe(401)
      expect(await countInRedis()).toBe(2)
      const denied = await app.get('/ok')
      expect(denied.status).toBe(429)
      expect(await client.pttl(stateKey as string)).toBeGreaterThan(0)
    } finally {
      await app.close()
      await limiter.reset('127.0.0.1')
    }
  })
})
