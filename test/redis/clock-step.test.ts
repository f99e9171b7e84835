// The application server's wall clock steps back (NTP, a VM restored): RedisStore decides on
// Redis's clock, and its denied cache keeps only spans on the monotonic clock, so a denial it
// remembers still ends after its retryAfter, not after the length of the step.
import { createLimiter } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'

const shared = await findRedis()

describe.skipIf(shared === undefined)('RedisStore when the local wall clock steps back an hour', () => {
  const client = new Redis(shared?.url ?? '', { enableOfflineQueue: true })
  afterEach(() => vi.useRealTimers())
  afterAll(async () => {
    client.disconnect()
    await shared?.stop()
  })

  it('a remembered denial ends with its retryAfter, not an hour later', async () => {
    const limiter = createLimiter({
      limits: { limit: 1, window: '1s', algorithm: 'fixed-window' },
      store: new RedisStore({ client, prefix: uniquePrefix('clock-step') }),
    })
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
    expect((await limiter.consume('k')).allowed).toBe(true)
    const denied = await limiter.consume('k')
    expect(denied.allowed).toBe(false)
    expect(denied.retryAfter).toBeLessThanOrEqual(1000)
    vi.setSystemTime(Date.now() - 3_600_000)
    // Redis's fixed window has turned once its retryAfter has passed on the real clock.
    await new Promise((resolve) => setTimeout(resolve, denied.retryAfter + 50))
    expect((await limiter.consume('k')).allowed).toBe(true)
  })
})
