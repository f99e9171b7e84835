import { ConfigError } from '@sluice/core'
import { RedisActiveClientsSync, RedisStore, SyncedStore } from '@sluice/redis'
import { Cluster, Redis } from 'ioredis'
import { Redis as Valkey, Cluster as ValkeyCluster } from 'iovalkey'
import { createClient, createCluster } from 'redis'
import { afterAll, describe, expect, it } from 'vitest'

/** Issue 13, defect 6: RedisStore rejects unknown options as rateLimit() does. No server needed. */
describe('RedisStore options', () => {
  const client = new Redis({ lazyConnect: true })
  afterAll(() => client.disconnect())

  const error = (options: object): ConfigError => {
    try {
      new RedisStore({ client, ...options } as never)
    } catch (caught) {
      if (caught instanceof ConfigError) return caught
      throw caught
    }
    throw new Error('expected a ConfigError')
  }

  it('rejects an unknown option, with a hint for those of other stores', () => {
    expect(error({ ttl: 10 })).toMatchObject({ field: 'ttl', value: 10 })
    expect(error({ ttl: 10 }).message).toMatch(/^ttl is not an option of RedisStore: expiries follow/)
    expect(error({ ttl: 10 }).message).toMatch(/known options: client, prefix, deniedCache, now, coalesce/)
    expect(error({ keyPrefix: 'x:' }).message).toMatch(/prefix on a RedisStore/)
    expect(error({ storeClient: client }).message).toMatch(/: use client/)
    expect(error({ Prefix: 'x:' }).message).toMatch(/did you mean prefix\?/)
    expect(() => new RedisStore({ client, prefix: 'ok:' })).not.toThrow()
  })
})

/** Issue 15: the client library is detected by shape; none of the supported ones is a ConfigError naming `client`. */
describe('Redis clients', () => {
  const io = new Redis({ lazyConnect: true })
  const ioCluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })
  const valkey = new Valkey({ lazyConnect: true })
  const valkeyCluster = new ValkeyCluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })
  afterAll(() => {
    for (const client of [io, ioCluster, valkey, valkeyCluster]) client.disconnect()
  })

  it.each([
    ['ioredis Redis', io],
    ['ioredis Cluster', ioCluster],
    ['iovalkey Redis', valkey],
    ['iovalkey Cluster', valkeyCluster],
    ['node-redis createClient', createClient()],
    ['node-redis createCluster', createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] })],
  ])('takes a %s, unconnected, in every Redis-backed part', (_, client) => {
    expect(() => new RedisStore({ client })).not.toThrow()
    expect(() => new SyncedStore({ client })).not.toThrow()
    expect(() => new RedisActiveClientsSync({ client })).not.toThrow()
  })

  it.each<[string, unknown, RegExp]>([
    ['nothing', undefined, /must be an ioredis or iovalkey Redis or Cluster, or a node-redis v5/],
    ['a plain object', {}, /must be an ioredis or iovalkey Redis or Cluster, or a node-redis v5/],
    ['a URL', 'redis://localhost', /must be an ioredis or iovalkey/],
    ['node-redis v4', { sendCommand: () => undefined, isOpen: false }, /node-redis before v5/],
    [
      'a node-redis Sentinel',
      {
        sendCommand: () => undefined,
        isOpen: false,
        withTypeMapping: () => undefined,
        getSentinelNode: () => undefined,
      },
      /Sentinel, not supported/,
    ],
  ])('rejects %s as client', (_, client, message) => {
    for (const make of [
      () => new RedisStore({ client } as never),
      () => new SyncedStore({ client } as never),
      () => new RedisActiveClientsSync({ client } as never),
    ]) {
      expect(make).toThrow(ConfigError)
      expect(make).toThrow(message)
      try {
        make()
      } catch (error) {
        expect(error).toMatchObject({ field: 'client', value: client })
      }
    }
  })
})
