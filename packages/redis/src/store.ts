import { createHash } from 'node:crypto'
import { type AlgorithmName, ConfigError, type Outcome, type PolicySet, type Store } from '@sluice/core'
import type { Cluster, Redis } from 'ioredis'
import { DeniedCache } from './denied-cache.js'
import { hashTag } from './keys.js'
import { DECIDE_LUA } from './lua/decide.js'
import { REFUND_LUA } from './lua/refund.js'

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
const REFUND_SHA = createHash('sha1').update(REFUND_LUA).digest('hex')
const DEFAULT_DENIED_CACHE_KEYS = 10_000
/** Bytes per policy in a script reply (five doubles), after the leading all-allowed flag. */
const REPLY_STRIDE = 40
/** Bytes per policy in the script's policy argument (six doubles). */
const POLICY_BYTES = 48
/** The script's algorithm codes (see DECIDE_LUA). */
const ALGORITHM_CODES: Record<AlgorithmName, number> = {
  'fixed-window': 1,
  'sliding-window': 2,
  'sliding-log': 3,
  'token-bucket': 4,
  gcra: 5,
}
/**
 * Part of every key: the state layout's version. Keys written by a release with another layout
 * (0.1's text state) are never read, so a rolling deploy cannot misread them.
 */
const LAYOUT = 'b:'

type Mode = 'consume' | 'peek'

/** ioredis makes a `…Buffer` twin of every command at run time; its typings omit these two. */
interface BufferScripts {
  evalshaBuffer(sha: string, numkeys: number, ...args: (string | Buffer)[]): Promise<Buffer>
  evalBuffer(script: string, numkeys: number, ...args: (string | Buffer)[]): Promise<Buffer>
}

/**
 * A `Store` on Redis: every policy of a set is decided by one script call (one EVALSHA, one
 * round trip, atomic, all-or-nothing) on the server's clock. Each policy's state is one string
 * key `<prefix>{<client key>}:b:<policy id>` (`b:` names the binary state layout), so two
 * limiters with the same policy share counts and all of one client's keys live in one Cluster slot.
 */
export class RedisStore implements Store {
  readonly prefix: string
  readonly #client: Redis | Cluster
  readonly #now: (() => number) | undefined
  readonly #denied: DeniedCache | undefined
  /** The script's policy argument, built once per policy set. */
  readonly #policyArgs = new WeakMap<PolicySet, Buffer>()

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

  /**
   * One script call for every policy of the set (see REFUND_LUA). Then drops the key's
   * denied-cache entry, which a denial decided before the refund landed may have written: the
   * refund may admit what it would still deny.
   */
  async refund(key: string, set: PolicySet, cost: number): Promise<void> {
    const keys = this.keysOf(key, set)
    const args: (Buffer | string)[] = [this.#argsOf(set), String(cost)]
    if (this.#now !== undefined) args.push(String(this.#now()))
    try {
      await this.#client.evalsha(REFUND_SHA, keys.length, ...keys, ...args)
    } catch (error) {
      // As #eval: NOSCRIPT means the script did not run, so sending it whole cannot refund twice.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      await this.#client.eval(REFUND_LUA, keys.length, ...keys, ...args)
    }
    this.#denied?.delete(cacheId(key, set))
  }

  /** The Redis keys holding `key`'s state under `set`, one per policy, in order. */
  keysOf(key: string, set: PolicySet): string[] {
    const head = `${this.prefix}{${hashTag(key)}}:${LAYOUT}`
    return set.policies.map((policy) => head + policy.id)
  }

  async #decide(mode: Mode, key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    const keys = this.keysOf(key, set)
    const args: (Buffer | string)[] = [this.#argsOf(set), mode === 'peek' ? 'peek' : String(cost)]
    if (this.#now !== undefined) args.push(String(this.#now()))
    const reply = await this.#eval(keys, args)
    const outcomes: Outcome[] = new Array(keys.length)
    for (let i = 0; i < keys.length; i++) {
      const at = 8 + i * REPLY_STRIDE
      outcomes[i] = {
        allowed: reply.readDoubleLE(at) === 1,
        remaining: reply.readDoubleLE(at + 8),
        resetAfter: reply.readDoubleLE(at + 16),
        retryAfter: reply.readDoubleLE(at + 24),
        delay: reply.readDoubleLE(at + 32),
      }
    }
    return outcomes
  }

  /**
   * EVALSHA, and EVAL only when the node answers NOSCRIPT (a new Cluster shard, a restart, SCRIPT
   * FLUSH). NOSCRIPT means the script did not run, so the retry never counts a request twice;
   * on a Cluster both go to the node owning the key's slot, so every node heals itself.
   */
  async #eval(keys: string[], args: (Buffer | string)[]): Promise<Buffer> {
    try {
      // The *Buffer forms: the reply is binary, not UTF-8 text. Not callBuffer('evalsha', …), which
      // ioredis's enableAutoPipelining sends with the script's SHA as the command name.
      return await (this.#client as unknown as BufferScripts).evalshaBuffer(SHA, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return await (this.#client as unknown as BufferScripts).evalBuffer(DECIDE_LUA, keys.length, ...keys, ...args)
    }
  }

  /** The script's policy argument: six little-endian doubles per policy, built once per set. */
  #argsOf(set: PolicySet): Buffer {
    let args = this.#policyArgs.get(set)
    if (args === undefined) {
      args = Buffer.alloc(set.policies.length * POLICY_BYTES)
      let at = 0
      for (const p of set.policies) {
        for (const value of [ALGORITHM_CODES[p.algorithm], p.limit, p.window, p.burst, p.precision, p.maxDelay]) {
          at = args.writeDoubleLE(value, at)
        }
      }
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
