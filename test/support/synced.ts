import type { PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { type RedisClient, RedisStore, SyncedStore, type SyncedStoreOptions } from '@sluice/redis'
import { uniquePrefix } from './redis.js'

/** Whether every policy of a decision admitted. */
export const allowed = (outcomes: readonly Outcome[]): boolean => outcomes.every((o) => o.allowed)

/**
 * SyncedStore nodes `n0`, `n1`… on one Redis and one fresh prefix, on the clock `now`, with an
 * interval of a minute so only `flush()` syncs; and a RedisStore on their prefix (no denied
 * cache) that reads back the states the nodes lease from.
 */
export function syncedFleet(
  client: RedisClient,
  {
    name,
    count = 1,
    now,
    lease = true,
    weights,
  }: {
    name: string
    count?: number
    now: () => number
    lease?: SyncedStoreOptions['lease']
    /** Each node's `weight`, in order. */
    weights?: readonly number[]
  },
): { nodes: SyncedStore[]; exact: RedisStore } {
  const prefix = uniquePrefix(name)
  const nodes = Array.from({ length: count }, (_, i) => {
    const weight = weights?.[i]
    return new SyncedStore({
      client,
      prefix,
      nodeId: `n${i}`,
      interval: '1m',
      now,
      lease,
      ...(weight === undefined ? {} : { weight }),
    })
  })
  return { nodes, exact: new RedisStore({ client, prefix, now, deniedCache: false }) }
}

/** What `exact` says is left of the set's first policy for `key`. */
export const left = async (exact: RedisStore, key: string, set: PolicySet): Promise<number | undefined> =>
  (await exact.peek(key, set))[0]?.remaining
