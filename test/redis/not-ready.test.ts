import { once } from 'node:events'
import { createLimiter } from '@sluice/core'
import { ClientNotReadyError, RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { findRedis, type RedisServer, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()

/**
 * Issue 40, item 6: a client that was never made ready fails the first decisions (onStoreError
 * decides them), and the error and the SLUICE_STORE_FAILING line say what to do.
 */
describe.skipIf(!redis)('a client that is not ready yet', () => {
  const server = redis as RedisServer
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('node-redis never connected: the error says to call connect(); once connected the store decides', async () => {
    const warnings = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const client = createClient({ url: server.url })
    const limiter = createLimiter({
      limits: '5/s',
      store: new RedisStore({ client, prefix: uniquePrefix('nr-closed') }),
    })
    const decision = await limiter.consume('k')
    expect(decision.source).toBe('error')
    expect(decision.error).toBeInstanceOf(ClientNotReadyError)
    expect((decision.error as Error).message).toMatch(
      /^the node-redis client is not connected: call await client\.connect\(\) before the first request \(The client is closed\)$/,
    )
    expect(warnings.mock.calls.flat().join('\n')).toMatch(/SLUICE_STORE_FAILING: .*await client\.connect\(\)/)
    await client.connect()
    try {
      expect(await limiter.consume('k')).toMatchObject({ source: 'store', remaining: 4 })
    } finally {
      client.destroy()
    }
  })

  it("ioredis not yet ready (enableOfflineQueue: false): the error says to wait for 'ready'; after it the store decides", async () => {
    const warnings = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const client = new Redis(server.url, { enableOfflineQueue: false })
    try {
      const limiter = createLimiter({
        limits: '5/s',
        store: new RedisStore({ client, prefix: uniquePrefix('io-wait') }),
      })
      const decision = await limiter.consume('k')
      expect(decision.source).toBe('error')
      expect(decision.error).toBeInstanceOf(ClientNotReadyError)
      expect((decision.error as Error).message).toMatch(
        /^the ioredis client is not ready \(status '\w+'\) and has not answered a store yet: if it has not connected, wait for its 'ready' event/,
      )
      expect(warnings.mock.calls.flat().join('\n')).toMatch(/SLUICE_STORE_FAILING: .*wait for its 'ready' event/)
      if (client.status !== 'ready') await once(client, 'ready')
      expect(await limiter.consume('k')).toMatchObject({ source: 'store', remaining: 4 })
      // Once it has answered, a later failure is an outage, reported as the client words it: on
      // this store, and on another store of the same client that had not been asked before.
      const second = createLimiter({ limits: '5/s', store: new RedisStore({ client, prefix: uniquePrefix('io-two') }) })
      client.disconnect()
      for (const later of [await limiter.consume('k'), await second.consume('k')]) {
        expect(later.source).toBe('error')
        expect(later.error).not.toBeInstanceOf(ClientNotReadyError)
      }
    } finally {
      client.disconnect()
    }
  })
})
