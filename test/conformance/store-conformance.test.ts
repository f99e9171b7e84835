// The store conformance suite of @sluice/core/testing, run as a third-party store would run it,
// against every store of the repository (the Durable Object's run is in test/edge).
import { FilteredStore, MemoryStore, SketchStore } from '@sluice/core'
import { type ConformanceCase, type StoreConformanceOptions, storeConformanceCases } from '@sluice/core/testing'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, it } from 'vitest'
import { findRedis, uniquePrefix } from '../support/redis.js'

/** Each case as a test; one the store does not declare what it needs for is reported skipped, with why. */
function runCases(options: StoreConformanceOptions): void {
  for (const c of storeConformanceCases(options) as ConformanceCase[]) {
    it(c.name, async (context) => {
      const result = await c.run()
      if (result !== undefined) context.skip(result.skipped)
    })
  }
}

describe('MemoryStore passes the store conformance suite', () => {
  runCases({ createStore: (now) => new MemoryStore({ now }) })
})

describe('SketchStore passes the store conformance suite', () => {
  runCases({ createStore: (now) => new SketchStore({ now }) })
})

describe('FilteredStore (a sketch before a MemoryStore) passes the store conformance suite', () => {
  runCases({
    createStore: (now) =>
      new FilteredStore({ store: new MemoryStore({ now }), sketch: new SketchStore({ now }), threshold: 1 }),
  })
})

const redis = await findRedis()

describe.skipIf(redis === undefined)('on Redis', () => {
  const client = new Redis(redis?.url ?? '')
  afterAll(async () => {
    client.disconnect()
    await redis?.stop()
  })

  describe('RedisStore passes the store conformance suite', () => {
    // The denied-key cache answers a repeated denial locally with the first denial's per-policy
    // outcomes (times moved on): the decision is the same, the other policies' details may not be.
    runCases({ createStore: (now) => new RedisStore({ client, now, prefix: uniquePrefix('conformance') }) })
  })

  describe('SyncedStore (one node, token bucket and GCRA not leased) passes the store conformance suite', () => {
    // `lease: false`: a leasing node holds units of a grant out of the state in Redis, so a request
    // costing more than its grant has left is decided on Redis's state without them and denied
    // where the transitions admit (the under-admission packages/redis/README.md documents). The
    // leases have their own tests (test/synced/lease.test.ts); fixed and sliding windows are
    // counted locally either way.
    runCases({
      createStore: (now) =>
        new SyncedStore({ client, now, lease: false, prefix: uniquePrefix('conformance-synced'), nodeId: 'n0' }),
      dispose: (store) => (store as SyncedStore).close(),
    })
  })
})
