// The store conformance suite of @sluice/core/testing, run as a third-party store would run it,
// against the built-in stores.
import { MemoryStore } from '@sluice/core'
import { storeConformanceCases } from '@sluice/core/testing'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, it } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'

describe('MemoryStore passes the store conformance suite', () => {
  for (const c of storeConformanceCases({ createStore: (now) => new MemoryStore({ now }) })) it(c.name, c.run)
})

const redis = await findRedis()

describe.skipIf(redis === undefined)('RedisStore passes the store conformance suite', () => {
  const client = new Redis(redis?.url ?? '')
  afterAll(async () => {
    client.disconnect()
    await redis?.stop()
  })
  // The denied-key cache answers a repeated denial locally with the first denial's per-policy
  // outcomes (times moved on): the decision is the same, the other policies' details may not be.
  const cases = storeConformanceCases({
    createStore: (now) => new RedisStore({ client, now, prefix: uniquePrefix('conformance') }),
  })
  for (const c of cases) it(c.name, c.run)
})
