import type { PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { type RedisClient, RedisStore, SyncedStore } from '@sluice/redis'

/** How a bench process asks for one decision on a key, and lets its store go. */
export interface Contender {
  decide(key: string): boolean | Promise<boolean>
  close(): Promise<void>
}

/**
 * A sluice store asked directly, as the HTTP adapters ask it: a SyncedStore (or a leased grant)
 * answers in the same tick, with no promise.
 */
export function storeContender(
  kind: 'RedisStore' | 'SyncedStore',
  client: RedisClient,
  prefix: string,
  set: PolicySet,
): Contender {
  const store = kind === 'RedisStore' ? new RedisStore({ client, prefix }) : new SyncedStore({ client, prefix })
  return {
    decide: (key) => {
      const answer = store.consume(key, set, 1)
      return Array.isArray(answer)
        ? answer.every((o) => o.allowed)
        : (answer as Promise<readonly Outcome[]>).then((o) => o.every((x) => x.allowed))
    },
    close: async () => {
      if (store instanceof SyncedStore) await store.close()
    },
  }
}
