import { createHash } from 'node:crypto'
import { ConfigError, type Outcome, type PolicySet, type Store } from '@sluice/core'
import type { Cluster, Redis } from 'ioredis'
import { DeniedCache } from './denied-cache.js'
import { hashTag } from './keys.js'
import { DECIDE_LUA } from './lua/decide.js'

export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster`. See the README for the client settings we recommend. */
  client: Redis | Cluster
  /** Put before every key. Default `'sluice:'`. Must not contain `{` or `}`. */
  prefix?: string
  /**
   * Answer a denied key locally until its retryAfter, without asking Redis. Default on with up
   * to 10 000 keys; `false` turns it off.
   */
  deniedCache?: boolean | { maxKeys?: number }
  /**
   * Tests only: a clock in epoch ms sent to the script instead of Redis's `TIME` (and used by
   * the denied cache). Leave unset in production so every process shares the server's clock.
   */
  now?: () => number
}

const SHA = createHash('sha1').update(DECIDE_LUA).digest('hex')
const DEFAULT_DENIED_CACHE_KEYS = 10_000
/** Values per policy in a script reply, after the leading all-allowed flag. */
const REPLY_STRIDE = 5

type Mode = 'consume' | 'peek'

/**
 * A `Store` on Redis: every policy of a set is decided by one script call (one EVALSHA, one
 * round trip, atomic, all-or-nothing) on the server's clock. Each policy's state is one string
 * key `<prefix>{<client key>}:<policy id>`, so two limiters with the same policy share counts
 * and all of one client's keys live in one Cluster slot.
 */
export class RedisStore implements Store {
  readonly prefix: string
  readonly #client: Redis | Cluster
  readonly #now: (() => number) | undefined
  readonly #denied: DeniedCache | undefined
  /** The script's per-policy arguments, built once per policy set. */
  readonly #policyArgs = new WeakMap<PolicySet, string[]>()

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { client: new Redis() }')
    }
    const { client, prefix = 'sluice:', deniedCache = true, now } = options
    if (client === null || typeof client !== 'object' || typeof client.evalsha !== 'function') {
      throw new ConfigError('client', client, 'must be an ioredis Redis or Cluster instance')
    }
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new ConfigError('prefix', prefix, 'must be a string without { or }, which would move the Cluster hash tag')
    }
    if (now !== undefined && typeof now !== 'function') {
      throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    }
    this.#client = client
    this.prefix = prefix
    this.#now = now
    this.#denied = deniedCache === false ? undefined : new DeniedCache(deniedCacheKeys(deniedCache))
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    const cache = this.#denied
    if (cache === undefined) return this.#decide('consume', key, set, cost)
    const id = cacheId(key, set)
    const cached = cache.get(id, cost, this.#localNow())
    if (cached !== undefined) return cached
    return this.#decide('consume', key, set, cost).then((outcomes) => {
      if (outcomes.some((o) => !o.allowed)) cache.set(id, cost, this.#localNow(), outcomes)
      return outcomes
    })
  }

  peek(key: string, set: PolicySet): Promise<readonly Outcome[]> {
    return this.#decide('peek', key, set, 1)
  }

  async reset(key: string, set: PolicySet): Promise<void> {
    this.#denied?.delete(cacheId(key, set))
    await this.#client.del(...this.keysOf(key, set))
  }

  /** The Redis keys holding `key`'s state under `set`, one per policy, in order. */
  keysOf(key: string, set: PolicySet): string[] {
    const head = `${this.prefix}{${hashTag(key)}}:`
    return set.policies.map((policy) => head + policy.id)
  }

  async #decide(mode: Mode, key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    const keys = this.keysOf(key, set)
    const args = [mode, this.#now === undefined ? '' : String(this.#now()), String(cost), ...this.#argsOf(set)]
    const reply = (await this.#eval(keys, args)) as number[]
    const outcomes: Outcome[] = new Array(keys.length)
    for (let i = 0; i < keys.length; i++) {
      const at = 1 + i * REPLY_STRIDE
      outcomes[i] = {
        allowed: reply[at] === 1,
        remaining: reply[at + 1] as number,
        resetAfter: reply[at + 2] as number,
        retryAfter: reply[at + 3] as number,
        delay: reply[at + 4] as number,
      }
    }
    return outcomes
  }

  /**
   * EVALSHA, and EVAL only when the node answers NOSCRIPT (a new Cluster shard, a restart, SCRIPT
   * FLUSH). NOSCRIPT means the script did not run, so the retry never counts a request twice;
   * on a Cluster both go to the node owning the key's slot, so every node heals itself.
   */
  async #eval(keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.#client.evalsha(SHA, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return this.#client.eval(DECIDE_LUA, keys.length, ...keys, ...args)
    }
  }

  #argsOf(set: PolicySet): string[] {
    let args = this.#policyArgs.get(set)
    if (args === undefined) {
      args = set.policies.flatMap((p) => [p.algorithm, p.limit, p.window, p.burst, p.precision, p.maxDelay].map(String))
      this.#policyArgs.set(set, args)
    }
    return args
  }

  #localNow(): number {
    return this.#now === undefined ? Date.now() : this.#now()
  }
}

function deniedCacheKeys(option: true | { maxKeys?: number }): number {
  const maxKeys = option === true ? DEFAULT_DENIED_CACHE_KEYS : (option.maxKeys ?? DEFAULT_DENIED_CACHE_KEYS)
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new ConfigError('deniedCache.maxKeys', maxKeys, 'must be a positive whole number')
  }
  return maxKeys
}

/** Set ids never contain NUL, so the first NUL splits the two parts: one-to-one. */
function cacheId(key: string, set: PolicySet): string {
  return `${set.id}\0${key}`
}
