import { createHash } from 'node:crypto'
import { ConfigError } from '@sluice/core'
import { keySlot } from './synced/slot.js'

/**
 * An ioredis or iovalkey `Redis` or `Cluster`, as sluice recognises it: an `evalsha` method and a
 * connection `status`. Any instance of those classes fits.
 */
export interface IoredisClient {
  readonly status: string
  evalsha(...args: never[]): unknown
}

/**
 * A node-redis v5 client (`createClient`) or cluster (`createCluster`) from `redis` or
 * `@redis/client`, as sluice recognises it: `sendCommand`, `isOpen` and `withTypeMapping`.
 * Connect it (`await client.connect()`) before the first decision.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean
  sendCommand(...args: never[]): unknown
  withTypeMapping(...args: never[]): unknown
}

/** Every client the Redis-backed parts take; which one it is, is detected, never configured. */
export type RedisClient = IoredisClient | NodeRedisClient

/** A Lua script and the SHA1 that EVALSHA names it by. */
export interface Script {
  readonly source: string
  readonly sha: string
}

/** A script with its SHA1, computed once at import. */
export function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') }
}

/** A script argument: numbers go as their decimal text. */
export type Arg = string | number | Buffer

/**
 * What the stores need from a client, whichever library made it. Every call's keys share one
 * hash slot (one hash tag), so on a Cluster each call goes whole to the node owning the first key.
 * `binary` returns bulk replies as Buffers instead of UTF-8 text; integers are numbers either way.
 */
export interface ScriptClient {
  /** The library's client: calls through every ScriptClient on it share their order (see `run`). */
  readonly connection: object
  /** Keys of one call must share a slot, and batches are split by hash tag. */
  readonly cluster: boolean
  /** Records that a call succeeded: after that, a failure is an outage, not a client never made ready. */
  noteAnswer(): void
  /** False while the client says it has no connection (connecting again, closed): a call would only wait. */
  connected(): boolean
  /**
   * A failed call's error, or a `ClientNotReadyError` around it when the client has never answered
   * and says why: a node-redis client not connected, an ioredis client not yet `ready`.
   */
  explain(error: unknown): unknown
  /**
   * The node a call on `keys` goes to, as the client's slot map says now: '' when not a Cluster,
   * or while the map does not know the slot yet.
   */
  nodeOf(keys: readonly string[]): string
  evalsha(sha: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown>
  eval(source: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown>
  del(keys: readonly string[]): Promise<unknown>
}

/**
 * Runs a script on `client`, keeping the client's script calls in the order they were issued (see
 * ScriptOrder): EVALSHA for a script that has run on the call's node since the last NOSCRIPT, else EVAL,
 * which loads it. NOSCRIPT means the script did not run, so its retry never counts a request twice.
 * On a Cluster every call goes to the node owning the keys' slot, so every node heals itself.
 */
export function run(
  client: ScriptClient,
  s: Script,
  keys: readonly string[],
  args: readonly Arg[],
  binary = false,
): Promise<unknown> {
  let order = orders.get(client.connection)
  if (order === undefined) {
    order = new ScriptOrder()
    orders.set(client.connection, order)
  }
  return order.run(client, s, keys, args, binary)
}

/** By library client: every store on one client shares its connection, so its order too. */
const orders = new WeakMap<object, ScriptOrder>()

/**
 * One library client's script calls (every store on it), applied by Redis in the order they were issued, across NOSCRIPT (a
 * restart, SCRIPT FLUSH, a new Cluster shard). Two rules keep the order and the EVALSHA fast path:
 * - Load before use: a script's first call on each node goes as EVAL, and again its first after any
 *   NOSCRIPT (calls behind it on the connection find it). Otherwise a refund's EVALSHA could miss its
 *   script on a node that has the decision's (on a Cluster: a shard no refund has reached yet), and
 *   a peek sent behind it would run before the refund's retry and read the state before it.
 * - Retry in order: after a NOSCRIPT, calls issued meanwhile wait until every call sent before has
 *   answered, each NOSCRIPT among them sent again as EVAL the moment it answers (in the order they
 *   were sent); only then do the waiting calls go, in the order they were issued.
 * What no client can order: another client loading a script on that node between two of this
 * client's calls already sent, the first of which answers NOSCRIPT.
 */
class ScriptOrder {
  /** By node (see `nodeOf`), the SHAs of the scripts sent to it as EVAL since its last NOSCRIPT: EVALSHA finds them. */
  readonly #loaded = new Map<string, Set<string>>()
  /** Calls sent and not yet answered (a retry is not counted: EVAL never answers NOSCRIPT). */
  #unanswered = 0
  /** While recovering from NOSCRIPT, the calls issued meanwhile, in order. */
  #waiting: (() => void)[] | undefined

  run(
    client: ScriptClient,
    s: Script,
    keys: readonly string[],
    args: readonly Arg[],
    binary: boolean,
  ): Promise<unknown> {
    const waiting = this.#waiting
    if (waiting === undefined) return this.#send(client, s, keys, args, binary)
    return new Promise((resolve) => waiting.push(() => resolve(this.#send(client, s, keys, args, binary))))
  }

  #send(
    client: ScriptClient,
    s: Script,
    keys: readonly string[],
    args: readonly Arg[],
    binary: boolean,
  ): Promise<unknown> {
    this.#unanswered++
    const node = client.nodeOf(keys)
    let loaded = this.#loaded.get(node)
    if (loaded === undefined) {
      loaded = new Set()
      this.#loaded.set(node, loaded)
    }
    let call: Promise<unknown>
    if (loaded.has(s.sha)) call = attempt(() => client.evalsha(s.sha, keys, args, binary))
    else {
      // Calls sent behind this one find the script it loads.
      loaded.add(s.sha)
      call = attempt(() => client.eval(s.source, keys, args, binary))
    }
    return call.then(
      (reply) => {
        client.noteAnswer()
        this.#answered()
        return reply
      },
      (error: unknown) => {
        if (!isNoScript(error)) {
          this.#answered()
          throw client.explain(error)
        }
        loaded.clear()
        this.#waiting ??= []
        // Sent before #answered can release the waiting calls, so it goes on the wire ahead of them.
        loaded.add(s.sha)
        const retry = attempt(() => client.eval(s.source, keys, args, binary))
        this.#answered()
        return retry.then(
          (reply) => {
            client.noteAnswer()
            return reply
          },
          (retryError: unknown) => {
            throw client.explain(retryError)
          },
        )
      },
    )
  }

  #answered(): void {
    if (--this.#unanswered > 0 || this.#waiting === undefined) return
    const waiting = this.#waiting
    this.#waiting = undefined
    for (const send of waiting) send()
  }
}

/** A client that throws instead of rejecting still gives the caller a rejection. */
function attempt(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return call()
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * The clients (the library's objects) a call has succeeded on, whichever store made the call: a
 * second store on a client the first has used is not "a client never made ready" in an outage.
 */
const answeredClients = new WeakSet<object>()

/** Whether any store's call has succeeded on `client`; records it on the first success. */
class Answers {
  #answered = false
  constructor(readonly client: object) {}

  note(): void {
    if (this.#answered) return
    this.#answered = true
    answeredClients.add(this.client)
  }

  get any(): boolean {
    return this.#answered || answeredClients.has(this.client)
  }
}

/**
 * A call failed on a client that has not answered yet and is not ready to: the message says what
 * to do (connect it, or wait for `ready`), the client's own error is the `cause`.
 */
export class ClientNotReadyError extends Error {
  override readonly name = 'ClientNotReadyError'
  constructor(advice: string, cause: unknown) {
    super(`${advice} (${cause instanceof Error ? cause.message : String(cause)})`, { cause })
  }
}

/** The reply error of EVALSHA for a script the node does not hold; ioredis and node-redis word it alike. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}

/**
 * The client behind one small interface, told apart by shape: ioredis and iovalkey have `evalsha`
 * and `status`, node-redis v5 has `sendCommand`, `isOpen` and `withTypeMapping` (and a cluster
 * `nodeClient`). Anything else is a ConfigError naming `client`.
 */
export function scriptClient(client: unknown): ScriptClient {
  if (client !== null && typeof client === 'object') {
    const c = client as Record<string, unknown>
    if (typeof c.evalsha === 'function' && typeof c.status === 'string') {
      return new IoredisScripts(client as IoredisBuffers, c.isCluster === true)
    }
    if (typeof c.sendCommand === 'function' && typeof c.isOpen === 'boolean') {
      if (typeof c.getSentinelNode === 'function') {
        throw new ConfigError(
          'client',
          client,
          'is a node-redis Sentinel, not supported: pass createClient() or createCluster()',
        )
      }
      if (typeof c.withTypeMapping !== 'function') {
        throw new ConfigError('client', client, 'looks like node-redis before v5: upgrade to redis@5')
      }
      return new NodeRedisScripts(client as NodeRedisSend, typeof c.nodeClient === 'function')
    }
  }
  throw new ConfigError(
    'client',
    client,
    'must be an ioredis or iovalkey Redis or Cluster, or a node-redis v5 createClient() or createCluster()',
  )
}

/** ioredis (and iovalkey) make a `…Buffer` twin of every command at run time; their typings omit these. */
interface IoredisBuffers {
  readonly status: string
  /** A Cluster's slot map: each slot's nodes as `host:port`, its master first. */
  readonly slots?: readonly (readonly string[] | undefined)[]
  evalsha(sha: string, numkeys: number, ...args: Arg[]): Promise<unknown>
  evalshaBuffer(sha: string, numkeys: number, ...args: Arg[]): Promise<unknown>
  eval(source: string, numkeys: number, ...args: Arg[]): Promise<unknown>
  evalBuffer(source: string, numkeys: number, ...args: Arg[]): Promise<unknown>
  del(...keys: string[]): Promise<unknown>
}

class IoredisScripts implements ScriptClient {
  readonly connection: object
  readonly #client: IoredisBuffers
  readonly cluster: boolean
  readonly #answers: Answers

  constructor(client: IoredisBuffers, cluster: boolean) {
    this.#client = client
    this.connection = client
    this.cluster = cluster
    this.#answers = new Answers(client)
  }

  noteAnswer(): void {
    this.#answers.note()
  }

  /** 'wait' is a lazy client's first call still to come; 'connect' is connected, not yet ready. */
  connected(): boolean {
    const { status } = this.#client
    return status === 'ready' || status === 'wait' || status === 'connect'
  }

  explain(error: unknown): unknown {
    const { status } = this.#client
    if (this.#answers.any || status === 'ready') return error
    return new ClientNotReadyError(
      `the ioredis client is not ready (status '${status}') and has not answered a store yet: if it has not connected, wait for its 'ready' event, e.g. await once(client, 'ready'), before the first request`,
      error,
    )
  }

  nodeOf(keys: readonly string[]): string {
    return this.cluster ? (this.#client.slots?.[keySlot(keys[0] as string)]?.[0] ?? '') : ''
  }

  // The *Buffer forms for binary replies. Not callBuffer('evalsha', …), which ioredis's
  // enableAutoPipelining sends with the script's SHA as the command name. The Cluster client
  // routes by the first key.
  evalsha(sha: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown> {
    const c = this.#client
    return binary ? c.evalshaBuffer(sha, keys.length, ...keys, ...args) : c.evalsha(sha, keys.length, ...keys, ...args)
  }

  eval(source: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown> {
    const c = this.#client
    return binary ? c.evalBuffer(source, keys.length, ...keys, ...args) : c.eval(source, keys.length, ...keys, ...args)
  }

  del(keys: readonly string[]): Promise<unknown> {
    return this.#client.del(...keys)
  }
}

/** node-redis's `sendCommand`: `(args, options)` on a client, `(firstKey, isReadonly, args, options)` on a cluster. */
interface NodeRedisSend {
  readonly isOpen: boolean
  readonly isReady?: boolean
  /** A cluster's slot map: each slot's master, by `host:port`. */
  readonly slots?: readonly ({ readonly master?: { readonly address?: string } } | undefined)[]
  sendCommand(...args: unknown[]): Promise<unknown>
}

/**
 * node-redis's reply type mappings: bulk strings (RESP type `$`, 36) as Buffers, or none (numbers
 * as numbers, text as strings). One goes with every call and replaces the client's own
 * (`commandOptions.typeMapping`), so what the application maps never changes a script reply.
 */
const BINARY = { 36: Buffer }
const TEXT = {}

class NodeRedisScripts implements ScriptClient {
  readonly connection: object
  readonly #client: NodeRedisSend
  readonly cluster: boolean
  readonly #answers: Answers

  constructor(client: NodeRedisSend, cluster: boolean) {
    this.#client = client
    this.connection = client
    this.cluster = cluster
    this.#answers = new Answers(client)
  }

  noteAnswer(): void {
    this.#answers.note()
  }

  /** A cluster has no single `isReady`: it routes per slot and is taken as connected. */
  connected(): boolean {
    return this.cluster || this.#client.isReady !== false
  }

  explain(error: unknown): unknown {
    if (this.#answers.any || this.#client.isOpen) return error
    return new ClientNotReadyError(
      'the node-redis client is not connected: call await client.connect() before the first request',
      error,
    )
  }

  nodeOf(keys: readonly string[]): string {
    return this.cluster ? (this.#client.slots?.[keySlot(keys[0] as string)]?.master?.address ?? '') : ''
  }

  evalsha(sha: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown> {
    return this.#send(keys, ['EVALSHA', sha, String(keys.length), ...keys, ...args.map(argOf)], binary)
  }

  eval(source: string, keys: readonly string[], args: readonly Arg[], binary: boolean): Promise<unknown> {
    return this.#send(keys, ['EVAL', source, String(keys.length), ...keys, ...args.map(argOf)], binary)
  }

  del(keys: readonly string[]): Promise<unknown> {
    return this.#send(keys, ['DEL', ...keys], false)
  }

  /**
   * A cluster routes by the first key (a write, so to the slot's master) and follows MOVED and ASK
   * itself; sending a script without it would go to any node and come back MOVED.
   */
  #send(keys: readonly string[], args: (string | Buffer)[], binary: boolean): Promise<unknown> {
    const options = { typeMapping: binary ? BINARY : TEXT }
    return this.cluster
      ? this.#client.sendCommand(keys[0], false, args, options)
      : this.#client.sendCommand(args, options)
  }
}

function argOf(arg: Arg): string | Buffer {
  return typeof arg === 'number' ? String(arg) : arg
}
