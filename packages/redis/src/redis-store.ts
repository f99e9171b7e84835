import { ConfigError, type PolicySet } from '@sluice/core'
import { assertKnownOptions } from '@sluice/core/internal'
import type { Outcome, Store } from '@sluice/core/store'
import { type RedisClient, run, type ScriptClient, script, scriptClient } from './client.js'
import { assertPrefix, CLIENT_OPTION_HINTS } from './common-options.js'
import { DeniedCache } from './denied-cache.js'
import { hashTag } from './keys.js'
import { BLOCK_LUA } from './lua/block.js'
import { DECIDE_LUA } from './lua/decide.js'
import { PENALIZE_LUA } from './lua/penalize.js'
import { policyRecords, readOutcomes, replyBytes } from './lua/protocol.js'
import { REFUND_LUA } from './lua/refund.js'

/** Options of `new RedisStore(options)`; see the README for each one. */
export interface RedisStoreOptions {
  /**
   * An ioredis or iovalkey `Redis` or `Cluster`, or a connected node-redis v5 client or cluster;
   * which one is detected. See the README for the client settings we recommend.
   */
  client: RedisClient
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

/** Every option `new RedisStore` takes: one list, so a new option is one more name here. */
export const REDIS_STORE_OPTION_NAMES: readonly string[] = ['client', 'prefix', 'deniedCache', 'now', 'coalesce']

const DECIDE = script(DECIDE_LUA)
const REFUND = script(REFUND_LUA)
const PENALIZE = script(PENALIZE_LUA)
const BLOCK = script(BLOCK_LUA)
const DEFAULT_DENIED_CACHE_KEYS = 10_000
const DEFAULT_MAX_BATCH = 16
/** A script blocks Redis while it runs (a few µs per decision and policy), so batches stay short. */
const MAX_BATCH_LIMIT = 1000
/**
 * Part of every key: the state layout's version. Keys written by a release with another layout
 * (0.1's text state; a sliding log as one packed string before its trailer layout, under `b:`)
 * are never read, so a rolling deploy cannot misread them; they expire on their own.
 */
const LAYOUT = 'b:'
/** A sliding log's layout (see lua/algorithms/sliding-log.ts). */
const LOG_LAYOUT = 'l:'

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

/**
 * A `Store` on Redis: every policy of a set is decided by one script call (one EVALSHA, one
 * round trip, atomic, all-or-nothing) on the server's clock. Each policy's state is one string
 * key `<prefix>{<client key>}:b:<policy id>` (`b:` names the binary state layout; `l:` in its
 * place for a sliding log, see lua/algorithms/sliding-log.ts), so two
 * limiters with the same policy share counts and all of one client's keys live in one Cluster slot.
 */
export class RedisStore implements Store {
  /**
   * Fixed windows start at the policy's offset (calendar periods): the limiter resolves the
   * period's bounds on its clock, the script decides the count and expiry on Redis's TIME.
   */
  readonly calendarPeriods = true
  /** The fixed-window Lua starts a `start: 'first-request'` window at the key's first request, as core. */
  readonly firstRequestWindows = true
  /** The token bucket's and GCRA's Lua follow `warmup` (algorithms/warm-up.ts), as core. */
  readonly warmup = true
  readonly prefix: string
  readonly #client: ScriptClient
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
    assertKnownOptions(
      options as unknown as Record<string, unknown>,
      REDIS_STORE_OPTION_NAMES,
      'RedisStore',
      CLIENT_OPTION_HINTS,
    )
    const { client, prefix = 'sluice:', deniedCache = true, now, coalesce = true } = options
    const scripts = scriptClient(client)
    assertPrefix(prefix)
    if (now !== undefined && typeof now !== 'function') {
      throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    }
    this.#client = scripts
    this.prefix = prefix
    this.#now = now
    this.#denied = deniedCache === false ? undefined : new DeniedCache(deniedCacheKeys(deniedCache))
    this.#maxBatch = maxBatchOf(coalesce)
    this.#byClientKey = scripts.cluster
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    const cache = this.#denied
    if (cache === undefined) return this.#decide(key, set, String(cost))
    // While nothing is remembered (the usual case), no lookup and no id to build.
    if (cache.size > 0) {
      const cached = cache.get(cacheId(key, set), cost, this.#cacheNow(), set.policies)
      if (cached !== undefined) return cached
    }
    const epoch = cache.epoch
    return this.#decide(key, set, String(cost)).then((outcomes) => {
      // A cheaper request than a remembered denial gets here too: if admitted, that denial's counts are stale.
      if (outcomes.some((o) => !o.allowed)) {
        cache.set(cacheId(key, set), cost, this.#cacheNow(), outcomes, set.policies, epoch)
      } else if (cache.size > 0) cache.delete(cacheId(key, set))
      return outcomes
    })
  }

  peek(key: string, set: PolicySet): Promise<readonly Outcome[]> {
    return this.#decide(key, set, 'peek')
  }

  async reset(key: string, set: PolicySet): Promise<void> {
    this.#denied?.invalidate(cacheId(key, set))
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    await this.#client.del(this.keysOf(key, set))
  }

  /**
   * One script call for every policy of the set (see REFUND_LUA). The key's denied-cache entry
   * goes first, and denials still in flight are not remembered (`DeniedCache.invalidate`): the
   * refund may admit what they would still deny.
   */
  async refund(key: string, set: PolicySet, cost: number, admittedAt?: number): Promise<void> {
    this.#denied?.invalidate(cacheId(key, set))
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    const keys = this.keysOf(key, set)
    // The script reads the server's clock: the admission goes as an age, which local and server
    // clocks agree on even when their times differ.
    const age = admittedAt === undefined ? '' : String(Math.max(0, Math.round(this.#localNow() - admittedAt)))
    const args: (Buffer | string)[] = [this.#argsOf(set), String(cost), age]
    if (this.#now !== undefined) args.push(String(this.#now()))
    await run(this.#client, REFUND, keys, args, true)
  }

  /**
   * One script call taking `cost` from every policy of the set whatever the limits (see
   * PENALIZE_LUA); decisions asked for later see it, NOSCRIPT or not (`run` keeps the order).
   */
  async penalize(key: string, set: PolicySet, cost: number): Promise<void> {
    this.#denied?.invalidate(cacheId(key, set))
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    const keys = this.keysOf(key, set)
    const args: (Buffer | string)[] = [this.#argsOf(set), String(cost)]
    if (this.#now !== undefined) args.push(String(this.#now()))
    await run(this.#client, PENALIZE, keys, args, true)
  }

  /** One script call blocking the key in the set's blockFor policies (see BLOCK_LUA), in order as penalize. */
  async block(key: string, set: PolicySet, duration: number): Promise<void> {
    this.#denied?.invalidate(cacheId(key, set))
    this.#flush() // decisions asked for earlier, still waiting in a batch, go first
    const keys = this.keysOf(key, set)
    const args: (Buffer | string)[] = [this.#argsOf(set), String(duration)]
    if (this.#now !== undefined) args.push(String(this.#now()))
    await run(this.#client, BLOCK, keys, args, true)
  }

  /** The clock `refund`'s `admittedAt` is read on: the local one (the script turns it into an age). */
  now(): number {
    return this.#localNow()
  }

  /** The Redis keys holding `key`'s state under `set`, one per policy, in order. */
  keysOf(key: string, set: PolicySet): string[] {
    return this.#keysUnder(this.#head(key), set)
  }

  #head(key: string): string {
    return `${this.prefix}{${hashTag(key)}}:`
  }

  #keysUnder(head: string, set: PolicySet): string[] {
    return set.policies.map((policy) => head + (policy.algorithm === 'sliding-log' ? LOG_LAYOUT : LAYOUT) + policy.id)
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
      return this.#send(keys, [this.#argsOf(set), cost], keys.length, splitOne)
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
    batch.settle(this.#send(batch.keys, batch.args, batch.sizes, splitReply))
  }

  /**
   * One script call, its reply read by `split` (with `sizes`: the decisions' numbers of policies).
   * Plain promise callbacks, no async function: a lone decision's latency pays for every hop.
   */
  #send<S, T>(keys: string[], args: (Buffer | string)[], sizes: S, split: (reply: Buffer, sizes: S) => T): Promise<T> {
    if (this.#now !== undefined) args.push(String(this.#now()))
    this.#inFlight++
    return run(this.#client, DECIDE, keys, args, true).then(
      (reply) => {
        this.#inFlight--
        return split(reply as Buffer, sizes)
      },
      (error: unknown) => {
        this.#inFlight--
        throw error
      },
    )
  }

  /** The script's policy argument (the set's policy records, lua/protocol.ts), built once per set. */
  #argsOf(set: PolicySet): Buffer {
    let args = this.#policyArgs.get(set)
    if (args === undefined) {
      args = policyRecords(set)
      this.#policyArgs.set(set, args)
    }
    return args
  }

  #localNow(): number {
    return this.#now === undefined ? Date.now() : this.#now()
  }

  /**
   * The denied cache's clock: it keeps only spans (a denial holds for its retryAfter), so the
   * monotonic clock, which a step of the wall clock does not move: a step back must not make a
   * remembered denial last the length of the step.
   */
  #cacheNow(): number {
    return this.#now === undefined ? performance.now() : this.#now()
  }
}

/** Per decision: its part of the reply (lua/protocol.ts). */
function splitReply(reply: Buffer, sizes: number[]): Outcome[][] {
  const all: Outcome[][] = new Array(sizes.length)
  let at = 0
  for (let d = 0; d < sizes.length; d++) {
    const n = sizes[d] as number
    all[d] = readOutcomes(reply, at, n)
    at += replyBytes(n)
  }
  return all
}

/** The reply of a call deciding one request of `n` policies. */
function splitOne(reply: Buffer, n: number): Outcome[] {
  return readOutcomes(reply, 0, n)
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
