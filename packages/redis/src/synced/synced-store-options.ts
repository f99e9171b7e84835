import { randomUUID } from 'node:crypto'
import { ConfigError, type Observe } from '@sluice/core'
import { assertKnownOptions, toMilliseconds } from '@sluice/core/internal'
import type { RedisClient } from '../client.js'
import { assertPrefix, CLIENT_OPTION_HINTS } from '../common-options.js'
import { DEFAULT_LEASE_SIZING, type LeaseSizing } from './lease.js'

/** Every option `SyncedStore` takes; any other name is a ConfigError with a hint. */
export const SYNCED_STORE_OPTION_NAMES: readonly string[] = [
  'client',
  'prefix',
  'interval',
  'exactAbove',
  'maxKeys',
  'nodeId',
  'now',
  'observe',
  'weight',
  'lease',
]

/** Options of `SyncedStore`: `client`, `prefix`, `interval`, `exactAbove`, `maxKeys`, `nodeId`, `now`, `observe`, `weight`, `lease`. */
export interface SyncedStoreOptions {
  /** An ioredis or iovalkey `Redis` or `Cluster`, or a node-redis v5 client or cluster (see RedisStore). */
  client: RedisClient
  /** Put before every key. Default `'sluice:'`. Must not contain `{` or `}`. */
  prefix?: string
  /** How often counts go to Redis and come back: ms or a duration such as `'100ms'`. Default 100 ms. */
  interval?: number | string
  /**
   * Share of a limit (0 < exactAbove ≤ 1) from which a key is decided exactly, one script call per
   * request, until its window turns. Default 0.8. With 1 a key goes exact only once denied.
   */
  exactAbove?: number
  /** Keys (per policy set) kept in memory. Default 100 000. */
  maxKeys?: number
  /**
   * A name for this process in Redis, such as `os.hostname()`. Default a random UUID. Each start
   * adds `@<start time>.<random>` (`store.nodeId` is the whole): running totals start again from 0
   * at every start, and under a reused name Redis would keep the larger, older totals until the new
   * ones passed them, so a restart within a window, or two processes given one name, would admit
   * that window's counts again.
   */
  nodeId?: string
  /** Tests only: the clock in epoch ms, used instead of the local clock corrected to Redis `TIME`. */
  now?: () => number
  /**
   * Called with a `sync` event after each sync: how long it took, how many sub-windows it carried,
   * and any error (the same function a limiter's `observe` takes); its exceptions are contained.
   */
  observe?: Observe
  /**
   * The part of each limit (0 < weight ≤ 1) this node enforces alone while Redis is unreachable.
   * Default: learned per key, this node's part of the key's traffic at the last syncs (limit ÷ live
   * nodes for a key Redis has reported nothing of). Give it when you know better, e.g. 0.5 on
   * each of two nodes behind an even balancer.
   */
  weight?: number
  /**
   * Token bucket and GCRA by leasing (default `true`): each node takes grants of units out of the
   * key's state in Redis and spends them locally (see README). `false`: one script call per request.
   * An object leases with these sizes (each a share of the burst, split by `weight`, else evenly
   * over live nodes): `allocation` handed out at a key's first take (default 0), `cap` the most the
   * fleet's grants hold at once (default 0.1).
   */
  lease?: boolean | LeaseOptions
}

/** How leased grants are sized: see `SyncedStoreOptions.lease`. */
export interface LeaseOptions {
  /** Share of each burst handed out up front (0 ≤ allocation ≤ cap). Default 0. */
  allocation?: number
  /** Share of each burst the fleet's grants may hold at once (0 < cap ≤ 1). Default 0.1. */
  cap?: number
}

/** The options checked, with their defaults filled in. */
export interface ResolvedOptions {
  readonly client: RedisClient
  readonly prefix: string
  readonly interval: number
  readonly exactAbove: number
  readonly maxKeys: number
  readonly nodeId: string
  readonly now: (() => number) | undefined
  readonly observe: Observe | undefined
  readonly weight: number | undefined
  /** Undefined: not leased. */
  readonly lease: LeaseSizing | undefined
}

/** Checks every option at construction: a ConfigError naming the field and the value. */
export function resolveOptions(options: SyncedStoreOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError('options', options, 'must be an object such as { client: new Redis() }')
  }
  assertKnownOptions(
    options as unknown as Record<string, unknown>,
    SYNCED_STORE_OPTION_NAMES,
    'SyncedStore',
    CLIENT_OPTION_HINTS,
  )
  const { client, prefix = 'sluice:', interval = 100, exactAbove = 0.8, maxKeys = 100_000, now, observe } = options
  assertPrefix(prefix)
  if (typeof exactAbove !== 'number' || !(exactAbove > 0 && exactAbove <= 1)) {
    throw new ConfigError('exactAbove', exactAbove, 'must be a share of the limit above 0 and at most 1, such as 0.8')
  }
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new ConfigError('maxKeys', maxKeys, 'must be a positive whole number')
  }
  const name = options.nodeId
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) {
    throw new ConfigError('nodeId', name, 'must be a non-empty string of at most 200 characters')
  }
  const nodeId = name === undefined ? randomUUID() : `${name}@${startMark()}`
  const { weight } = options
  if (weight !== undefined && (typeof weight !== 'number' || !(weight > 0 && weight <= 1))) {
    throw new ConfigError('weight', weight, 'must be a share of each limit above 0 and at most 1, such as 0.5')
  }
  const lease = resolveLease(options.lease)
  if (now !== undefined && typeof now !== 'function') {
    throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
  }
  return {
    client,
    prefix,
    interval: toMilliseconds('interval', interval),
    exactAbove,
    maxKeys,
    nodeId,
    now,
    observe,
    weight,
    lease,
  }
}

/** The `lease` option checked: its sizes with defaults filled in, or undefined for `false`. */
function resolveLease(lease: SyncedStoreOptions['lease'] = true): LeaseSizing | undefined {
  if (lease === true) return DEFAULT_LEASE_SIZING
  if (lease === false) return undefined
  if (lease === null || typeof lease !== 'object') {
    throw new ConfigError(
      'lease',
      lease,
      'must be true, false or { allocation, cap } such as { allocation: 0.5, cap: 0.5 }',
    )
  }
  assertKnownOptions(lease as Record<string, unknown>, ['allocation', 'cap'], 'SyncedStore lease')
  const { allocation = DEFAULT_LEASE_SIZING.allocation, cap = DEFAULT_LEASE_SIZING.cap } = lease
  if (typeof cap !== 'number' || !(cap > 0 && cap <= 1)) {
    throw new ConfigError('lease.cap', cap, 'must be a share of each burst above 0 and at most 1, such as 0.1')
  }
  if (typeof allocation !== 'number' || !(allocation >= 0 && allocation <= cap)) {
    throw new ConfigError('lease.allocation', allocation, `must be a share of each burst from 0 to lease.cap (${cap})`)
  }
  return { allocation, cap }
}

/**
 * What makes a given name one start's own: the start time (base 36 ms, so an operator reads when)
 * and a random part, for two processes started in the same millisecond under one name.
 */
function startMark(): string {
  return `${Date.now().toString(36)}.${randomUUID().slice(0, 8)}`
}
