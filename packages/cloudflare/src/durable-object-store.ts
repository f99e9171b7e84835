import { ConfigError, type Policy, type PolicySet } from '@sluice/core'
import { assertKnownOptions } from '@sluice/core/internal'
import type { Outcome, Store } from '@sluice/core/store'
import { type LimiterRequest, type LimiterResponse, PROTOCOL_URL } from './protocol.js'
import { shardOf } from './shard.js'
import type { DurableObjectLocationHint, DurableObjectNamespaceLike } from './types.js'

/** Options of `new DurableObjectStore(options)`. */
export interface DurableObjectStoreOptions {
  /** The binding of the `RateLimiterObject` class (`env.LIMITER`). */
  namespace: DurableObjectNamespaceLike
  /**
   * Default: one object per key (`idFromName(key)`), the most parallelism and no shared
   * ceiling, at the price of one object per active key. A number spreads keys over that many
   * objects (`idFromName('shard-N')`, N from a hash of the key): fewer objects, but each serves
   * all its keys one request at a time (about 1000 requests a second per object). Changing it
   * moves keys to other objects, which start them afresh.
   */
  shards?: number
  /**
   * Where Cloudflare should create objects that do not exist yet, e.g. `'weur'` when most
   * traffic comes from western Europe (Cloudflare's `namespace.get(id, { locationHint })`).
   * Default: near the first request that reaches each object. For data that must stay in a
   * jurisdiction, pass a restricted namespace instead: `env.LIMITER.jurisdiction('eu')`.
   */
  locationHint?: DurableObjectLocationHint
  /**
   * The clock the objects decide on, epoch ms, sent with every call (tests). Default: each
   * object reads its own.
   */
  now?: () => number
}

/** Every option `new DurableObjectStore` takes. */
export const DURABLE_OBJECT_STORE_OPTION_NAMES: readonly string[] = ['namespace', 'shards', 'locationHint', 'now']

/** Cloudflare's location hints. */
export const DURABLE_OBJECT_LOCATION_HINTS: readonly DurableObjectLocationHint[] = [
  'wnam',
  'enam',
  'sam',
  'weur',
  'eeur',
  'apac',
  'oc',
  'afr',
  'me',
]

/** One kind of request, less what every call adds (key, policies, clock). */
type Call<R = LimiterRequest> = R extends LimiterRequest ? Omit<R, 'key' | 'policies' | 'now'> : never

/**
 * A `Store` whose decisions are made by `RateLimiterObject` Durable Objects: exact across every
 * isolate and location, for every algorithm, with refunds, penalties and blocks. Each call is
 * one request to the key's object (a subrequest of the Worker's request, billed as a Durable
 * Object request), so a decision takes one round trip to wherever the object lives.
 *
 * It talks to the object through `fetch` with a small JSON body rather than JS RPC: that works
 * on any compatibility date and needs no `cloudflare:workers` import, so this package also
 * loads in Node (tests, type checks) and the object class needs no base class.
 */
export class DurableObjectStore implements Store {
  /**
   * Fixed windows start at the policy's offset (calendar periods): the object runs core's
   * transitions on the fixed window the limiter resolved, on the same clock the limiter chose the
   * period by when the store has a `now`, else on the object's own.
   */
  readonly calendarPeriods = true
  /** The object runs core's transitions, which start a `start: 'first-request'` window at the key's first request. */
  readonly firstRequestWindows = true
  /** The object runs core's transitions, which follow a token bucket's or GCRA's `warmup`. */
  readonly warmup = true
  /** The shard count, or undefined for one object per key. */
  readonly shards: number | undefined
  readonly #namespace: DurableObjectNamespaceLike
  /** What `namespace.get` is given besides the id; undefined without a location hint. */
  readonly #getOptions: { locationHint: DurableObjectLocationHint } | undefined
  readonly #now: (() => number) | undefined

  constructor(options: DurableObjectStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError('options', options, 'must be an object such as { namespace: env.LIMITER }')
    }
    assertKnownOptions(
      options as unknown as Record<string, unknown>,
      DURABLE_OBJECT_STORE_OPTION_NAMES,
      'DurableObjectStore',
    )
    const { namespace, shards, locationHint, now } = options
    if (
      namespace === null ||
      typeof namespace !== 'object' ||
      typeof namespace.idFromName !== 'function' ||
      typeof namespace.get !== 'function'
    ) {
      throw new ConfigError(
        'namespace',
        namespace,
        'must be a Durable Object namespace binding (env.LIMITER) bound to the RateLimiterObject class',
      )
    }
    if (shards !== undefined && (!Number.isSafeInteger(shards) || shards < 1)) {
      throw new ConfigError('shards', shards, 'must be a positive whole number, or left out for one object per key')
    }
    if (locationHint !== undefined && !DURABLE_OBJECT_LOCATION_HINTS.includes(locationHint)) {
      throw new ConfigError(
        'locationHint',
        locationHint,
        `must be one of Cloudflare's location hints: ${DURABLE_OBJECT_LOCATION_HINTS.join(', ')}`,
      )
    }
    if (now !== undefined && typeof now !== 'function') {
      throw new ConfigError('now', now, 'must be a function returning epoch milliseconds')
    }
    this.#namespace = namespace
    this.#getOptions = locationHint === undefined ? undefined : { locationHint }
    this.shards = shards
    this.#now = now
  }

  /** The clock `admittedAt` is read on: the `now` option, else `Date.now()`. */
  now(): number {
    return this.#now === undefined ? Date.now() : Math.floor(this.#now())
  }

  /** The object's name for `key`: the key itself, or `shard-N`. */
  objectName(key: string): string {
    return this.shards === undefined ? key : `shard-${shardOf(key, this.shards)}`
  }

  consume(key: string, set: PolicySet, cost: number): Promise<readonly Outcome[]> {
    return this.#call(key, set, { op: 'consume', cost }) as Promise<readonly Outcome[]>
  }

  peek(key: string, set: PolicySet): Promise<readonly Outcome[]> {
    return this.#call(key, set, { op: 'peek' }) as Promise<readonly Outcome[]>
  }

  async reset(key: string, set: PolicySet): Promise<void> {
    await this.#call(key, set, { op: 'reset' })
  }

  async refund(key: string, set: PolicySet, cost: number, admittedAt?: number): Promise<void> {
    await this.#call(key, set, admittedAt === undefined ? { op: 'refund', cost } : { op: 'refund', cost, admittedAt })
  }

  async penalize(key: string, set: PolicySet, cost: number): Promise<void> {
    await this.#call(key, set, { op: 'penalize', cost })
  }

  async block(key: string, set: PolicySet, duration: number): Promise<void> {
    await this.#call(key, set, { op: 'block', duration })
  }

  async #call(key: string, set: PolicySet, call: Call): Promise<LimiterResponse> {
    const request = { ...call, key, policies: wirePolicies(set), now: this.#now === undefined ? undefined : this.now() }
    const id = this.#namespace.idFromName(this.objectName(key))
    const stub = this.#getOptions === undefined ? this.#namespace.get(id) : this.#namespace.get(id, this.#getOptions)
    const response = await stub.fetch(PROTOCOL_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    })
    if (!response.ok) {
      throw new Error(`RateLimiterObject answered ${response.status}: ${await response.text()}`)
    }
    return (await response.json()) as LimiterResponse
  }
}

/** What is sent for each set, made once per set (the limiter hands a store one set per period). */
const sent = new WeakMap<PolicySet, readonly Policy[]>()

/**
 * The set's policies as the object needs them. A calendar policy reaches the store resolved into
 * the fixed window of its period (`window`, `offset`, an id naming the period's start), which is
 * all the object decides on; its `calendar` is left out, its anchor possibly a function that JSON
 * cannot carry.
 */
function wirePolicies(set: PolicySet): readonly Policy[] {
  if (!set.policies.some((policy) => policy.calendar !== undefined)) return set.policies
  let policies = sent.get(set)
  if (policies === undefined) {
    policies = set.policies.map((policy) => ({ ...policy, calendar: undefined }))
    sent.set(set, policies)
  }
  return policies
}
