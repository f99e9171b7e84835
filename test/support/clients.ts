// The Redis client libraries the Redis-backed parts take, as one table: a suite runs once per row
// (`describe.each(CLIENTS)`) instead of being copied per library. Inspection and admin commands in
// the tests stay on ioredis; only the client handed to the store changes.
import { MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { type RedisClient, RedisStore, SyncedStore } from '@sluice/redis'
import { Cluster as IoCluster, Redis as IoRedis, type RedisOptions } from 'ioredis'
import { Cluster as ValkeyCluster, Redis as ValkeyRedis } from 'iovalkey'
import { createClient, createCluster } from 'redis'

/** A connected client for a store, and how to let it go. */
export interface TestClient {
  readonly client: RedisClient
  close(): void
}

/**
 * `recommended`: the package README's settings for that library (no offline queue, no resend),
 * with a fast reconnect for the tests; `default`: the library's defaults but the fast reconnect.
 */
export type Settings = 'recommended' | 'default'

export interface ClientKind {
  readonly name: 'ioredis' | 'iovalkey' | 'node-redis'
  /** A client of the server on `port` (127.0.0.1), ready to send commands. */
  single(port: number, settings?: Settings): Promise<TestClient>
  /** A Cluster client knowing `nodes`, ready to send commands. */
  cluster(nodes: readonly { host: string; port: number }[], settings?: Settings): Promise<TestClient>
}

const IOREDIS_RECOMMENDED: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
}

/** ioredis and iovalkey take the same options and events (iovalkey is a fork). */
function ioredisFamily(name: 'ioredis' | 'iovalkey', Redis: typeof IoRedis, Cluster: typeof IoCluster): ClientKind {
  return {
    name,
    async single(port, settings = 'default') {
      const options = { retryStrategy: () => 50, ...(settings === 'recommended' ? IOREDIS_RECOMMENDED : {}) }
      const client = new Redis(port, '127.0.0.1', options)
      client.on('error', () => {}) // Logged by the app in real life; the test only needs it handled.
      // Without the offline queue a command before 'ready' fails at once; wait for the connection.
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
      return { client, close: () => client.disconnect() }
    },
    async cluster(nodes, settings = 'default') {
      const client = new Cluster(
        nodes as { host: string; port: number }[],
        settings === 'recommended'
          ? {
              enableOfflineQueue: false,
              clusterRetryStrategy: () => 50,
              redisOptions: { maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false },
            }
          : {},
      )
      client.on('error', () => {})
      if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
      return { client, close: () => client.disconnect() }
    },
  }
}

/** node-redis: `disableOfflineQueue` is its `enableOfflineQueue: false`; it never resends a command. */
const nodeRedis: ClientKind = {
  name: 'node-redis',
  async single(port, settings = 'default') {
    const client = createClient({
      socket: { host: '127.0.0.1', port, reconnectStrategy: () => 50 },
      disableOfflineQueue: settings === 'recommended',
    })
    client.on('error', () => {})
    await client.connect()
    return {
      client,
      close: () => {
        if (client.isOpen) client.destroy()
      },
    }
  },
  async cluster(nodes, settings = 'default') {
    const client = createCluster({
      rootNodes: nodes.map((n) => ({ socket: { host: n.host, port: n.port } })),
      defaults: { socket: { reconnectStrategy: () => 50 }, disableOfflineQueue: settings === 'recommended' },
    })
    client.on('error', () => {})
    await client.connect()
    return {
      client,
      close: () => {
        if (client.isOpen) client.destroy()
      },
    }
  },
}

/** Every supported client library; a suite parametrised by it runs once per row. */
export const CLIENTS: readonly ClientKind[] = [
  ioredisFamily('ioredis', IoRedis, IoCluster),
  ioredisFamily('iovalkey', ValkeyRedis as unknown as typeof IoRedis, ValkeyCluster as unknown as typeof IoCluster),
  nodeRedis,
]

/** The row of one library, e.g. for a child process told its library by name. */
export function clientKind(name: string): ClientKind {
  const kind = CLIENTS.find((k) => k.name === name)
  if (kind === undefined) throw new Error(`no client library named ${name}: ${CLIENTS.map((k) => k.name).join(', ')}`)
  return kind
}

/** A store made on an injected clock, named for the table of a suite. */
export type StoreOnClock = [name: string, make: (now: () => number) => Store]

/**
 * A MemoryStore and a RedisStore on each client of `connected` (filled by the suite's beforeAll,
 * read when a store is made), to decide one scenario alike on every store.
 */
export function memoryAndRedisStores(connected: ReadonlyMap<string, TestClient>, prefix: string): StoreOnClock[] {
  return [
    ['memory', (now) => new MemoryStore({ now })],
    ...CLIENTS.map(
      ({ name }): StoreOnClock => [
        `redis on ${name}`,
        (now) =>
          new RedisStore({ client: (connected.get(name) as TestClient).client, prefix, now, deniedCache: false }),
      ],
    ),
  ]
}

/**
 * A SyncedStore on each client of `connected`, one node alone in its fleet (a prefix of its own
 * per store): the rows to add to `memoryAndRedisStores` for a scenario every store that counts
 * decides alike. Each store made is put in `made`, for the suite to close. Its timer waits an hour:
 * the scenario's steps, not background syncs, decide what Redis sees.
 */
export function syncedStores(
  connected: ReadonlyMap<string, TestClient>,
  prefix: string,
  made: SyncedStore[],
): StoreOnClock[] {
  let stores = 0
  return CLIENTS.map(
    ({ name }): StoreOnClock => [
      `synced on ${name}`,
      (now) => {
        const client = (connected.get(name) as TestClient).client
        const store = new SyncedStore({ client, prefix: `${prefix}synced-${stores++}:`, interval: '1h', now })
        made.push(store)
        return store
      },
    ],
  )
}
