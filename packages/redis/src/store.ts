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
  /**
   * Decisions that arrive while a script call is in flight go together, up to `maxBatch` (default
   * 16) per script call, decided in arrival order, each still atomic; on a Cluster only those of
   * one client key. A decision with nothing in flight goes at once. Default on; `false` sends
   * every decision on its own.
   */
  coalesce?: boolean | { maxBatch?: number }
}

/** A Lua script and the SHA1 that EVALSHA names it by. */
interface Script {
  readonly source: string
  readonly sha: string
}
const script = (source: string): Script => ({ source, sha: createHash('sha1').update(source).digest('hex') })
const DECIDE = script(DECIDE_LUA)
const REFUND = script(REFUND_LUA)
const DEFAULT_DENIED_CACHE_KEYS = 10_000
const DEFAULT_MAX_BATCH = 16
/** A script blocks Redis while it runs (a few µs per decision and policy), so batches stay short. */
const MAX_BATCH_LIMIT = 1000
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

/** Decisions waiting to be sent as one script call, with the promise of their outcomes. */
class Batch {
  readonly keys: string[] = []
  /** Per decision: its policy argument and its cost (or 'peek'). */
  readonly args: (Buffer | string)[] = []
  /** Per decision: its number of policies, to split the reply. */
  readonly sizes: number[] = []
  readonly outcomes: Promise<Outcome[][]>
  settle!: (outcomes: Promise<Outcome[][]>) => void

  constructor() {
    this.outcomes = new Promise((resolve) => {
      this.settle = resolve
    })
  }

  add(keys: string[], policies: Buffer, cost: string): number {
    for (const key of keys) this.keys.push(key)
    this.args.push(policies, cost)
    return this.sizes.push(keys.length) - 1
  }
}

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
  /** Decisions per script call at most; undefined when coalescing is off. */
  readonly #maxBatch: number | undefined
  /** On a Cluster a script's keys must share a slot: only one client key's decisions share a call. */
  readonly #byClientKey: boolean
  /** Batches being filled, by client key on a Cluster, else all under ''. */
  readonly #pending = new Map<string, Batch>()
  #flushScheduled = false
  /** Script calls sent and not yet answered. */
  #inFlight = 0

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { client: new Redis() }')
    }
    const { client, prefix = 'sluice:', deniedCache = true, now, coalesce = true } = options
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
    this.#maxBatch = maxBatchOf(coalesce)
    this.#byClientKey = client.isCluster === true
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    const cache = this.#denied
    if (cache === undefined) return this.#decide(key, set, String(cost))
    const id = cacheId(key, set)
    const cached = cache.get(id, cost, this.#localNow())
    if (cached !== undefined) return cached
    return this.#decide(key, set, String(cost)).then((outcomes) => {
      if (outcomes.some((o) => !o.allowed)) cache.set(id, cost, this.#localNow(), outcomes)
      return outcomes
    })
  }

  peek(key: string, set: PolicySet): Promise<readonly Outcome[]> {
    return this.#decide(key, set, 'peek')
  }

  async reset(key: string, set: PolicySet): Promise<void> {
    this.#denied?.delete(cacheId(key, set))
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    await this.#client.del(...this.keysOf(key, set))
  }

  /**
   * One script call for every policy of the set (see REFUND_LUA). Then drops the key's
   * denied-cache entry, which a denial decided before the refund landed may have written: the
   * refund may admit what it would still deny.
   */
  async refund(key: string, set: PolicySet, cost: number): Promise<void> {
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    const keys = this.keysOf(key, set)
    const args: (Buffer | string)[] = [this.#argsOf(set), String(cost)]
    if (this.#now !== undefined) args.push(String(this.#now()))
    await this.#eval(REFUND, keys, args)
    this.#denied?.delete(cacheId(key, set))
  }

  /** The Redis keys holding `key`'s state under `set`, one per policy, in order. */
  keysOf(key: string, set: PolicySet): string[] {
    return this.#keysUnder(this.#head(key), set)
  }

  #head(key: string): string {
    return `${this.prefix}{${hashTag(key)}}:${LAYOUT}`
  }

  #keysUnder(head: string, set: PolicySet): string[] {
    return set.policies.map((policy) => head + policy.id)
  }

  /**
   * One decision at `cost` (decimal text, or 'peek'). With nothing in flight it goes at once, on
   * its own; otherwise it joins the batch being filled, which goes when full or at the end of
   * this event-loop turn (setImmediate, after the replies and callbacks of this turn have run),
   * so a busy store sends one script call where it would have sent many.
   */
  #decide(key: string, set: PolicySet, cost: string): Promise<readonly Outcome[]> {
    const head = this.#head(key)
    const keys = this.#keysUnder(head, set)
    const maxBatch = this.#maxBatch
    if (maxBatch === undefined || (this.#inFlight === 0 && this.#pending.size === 0)) {
      return this.#send(keys, [this.#argsOf(set), cost], [keys.length]).then(firstOf)
    }
    const group = this.#byClientKey ? head : ''
    let batch = this.#pending.get(group)
    if (batch === undefined) {
      batch = new Batch()
      this.#pending.set(group, batch)
    }
    const index = batch.add(keys, this.#argsOf(set), cost)
    if (batch.sizes.length >= maxBatch) {
      this.#pending.delete(group)
      this.#launch(batch)
    } else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(this.#flush)
    }
    return batch.outcomes.then((all) => all[index] as Outcome[])
  }

  /** Sends every batch being filled (one per client key on a Cluster). */
  readonly #flush = (): void => {
    this.#flushScheduled = false
    for (const batch of this.#pending.values()) this.#launch(batch)
    this.#pending.clear()
  }

  #launch(batch: Batch): void {
    batch.settle(this.#send(batch.keys, batch.args, batch.sizes))
  }

  /** One script call deciding `sizes.length` decisions in order; their outcomes, in order. */
  async #send(keys: string[], args: (Buffer | string)[], sizes: number[]): Promise<Outcome[][]> {
    if (this.#now !== undefined) args.push(String(this.#now()))
    this.#inFlight++
    let reply: Buffer
    try {
      reply = await this.#eval(DECIDE, keys, args)
    } finally {
      this.#inFlight--
    }
    return splitReply(reply, sizes)
  }

  /**
   * EVALSHA, and EVAL only when the node answers NOSCRIPT (a new Cluster shard, a restart, SCRIPT
   * FLUSH). NOSCRIPT means the script did not run (no decision of the batch), so the retry never
   * counts a request twice; on a Cluster both go to the node owning the key's slot, so every node
   * heals itself.
   */
  async #eval(script: Script, keys: string[], args: (Buffer | string)[]): Promise<Buffer> {
    const client = this.#client as unknown as BufferScripts
    try {
      // The *Buffer forms: the reply is binary, not UTF-8 text. Not callBuffer('evalsha', …), which
      // ioredis's enableAutoPipelining sends with the script's SHA as the command name.
      return await client.evalshaBuffer(script.sha, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return await client.evalBuffer(script.source, keys.length, ...keys, ...args)
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

/** Per decision: the all-allowed flag, then five doubles per policy. */
function splitReply(reply: Buffer, sizes: number[]): Outcome[][] {
  const all: Outcome[][] = new Array(sizes.length)
  let at = 0
  for (let d = 0; d < sizes.length; d++) {
    const n = sizes[d] as number
    const outcomes: Outcome[] = new Array(n)
    at += 8
    for (let i = 0; i < n; i++, at += REPLY_STRIDE) {
      outcomes[i] = {
        allowed: reply.readDoubleLE(at) === 1,
        remaining: reply.readDoubleLE(at + 8),
        resetAfter: reply.readDoubleLE(at + 16),
        retryAfter: reply.readDoubleLE(at + 24),
        delay: reply.readDoubleLE(at + 32),
      }
    }
    all[d] = outcomes
  }
  return all
}

function firstOf(all: Outcome[][]): Outcome[] {
  return all[0] as Outcome[]
}

function maxBatchOf(option: unknown): number | undefined {
  if (option === false) return undefined
  if (option === true) return DEFAULT_MAX_BATCH
  if (option === null || typeof option !== 'object') {
    throw new ConfigError('coalesce', option, 'must be true, false or { maxBatch }')
  }
  const { maxBatch = DEFAULT_MAX_BATCH } = option as { maxBatch?: unknown }
  if (typeof maxBatch !== 'number' || !Number.isSafeInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_BATCH_LIMIT) {
    throw new ConfigError('coalesce.maxBatch', maxBatch, `must be a whole number from 1 to ${MAX_BATCH_LIMIT}`)
  }
  return maxBatch
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
