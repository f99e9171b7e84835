import type { Policy } from '@sluice/core'
import { type AlgorithmState, blockState, evaluate, peekOutcome, penalize, refund, step } from '@sluice/core/store'
import { type LimiterRequest, type LimiterResponse, parseRequest } from './protocol.js'
import type { DurableObjectStateLike, DurableObjectStorageLike } from './types.js'

/** What the object keeps for one key, in its storage under `k:<key>` and in memory. */
interface Entry {
  /** Each policy's state, by policy id (a policy's state is shared by every limiter with that policy). */
  readonly states: Record<string, AlgorithmState>
  /** When each state is back to full quota, on the deciding clock, and so reads as no state at all. */
  readonly expiries: Record<string, number>
  /** When the whole entry can be deleted, on the object's own clock (see `RateLimiterObject`). */
  sweepAt: number
}

/** Storage keys of entries start with this; nothing else is stored. */
const ENTRY_PREFIX = 'k:'
/** Entries read per page when an alarm sweeps the storage. */
const SWEEP_PAGE = 1000
/** Entries kept in memory at most: beyond, the oldest read is dropped (storage still has it). */
const MAX_CACHED = 10_000

/**
 * A Durable Object that decides rate limits for the keys routed to it, with the same pure
 * transitions as `MemoryStore`. A Durable Object is a single writer, so its decisions are exact
 * however many Workers call it at once. Export it from your Worker and bind it (Wrangler:
 * `durable_objects.bindings = [{ name = "LIMITER", class_name = "RateLimiterObject" }]` and a
 * migration with `new_classes` or `new_sqlite_classes`), then use `DurableObjectStore`.
 *
 * Each key's state lives in the object's transactional storage, with a copy in memory: a
 * decision on a key already read runs without waiting, and its write is not awaited (the
 * runtime's output gate holds the answer until the write is durable). State therefore survives
 * the object being evicted or moved. Entries no longer needed are deleted by an alarm, never a
 * timer: an entry goes once it has been back to full quota for `cleanupDelay` ms, so one alarm
 * deletes many.
 *
 * The object answers only the JSON protocol its store sends to `fetch`; do not route public
 * requests to it.
 */
export class RateLimiterObject {
  /**
   * Milliseconds an entry stays after its key is back to full quota, so that one alarm cleans up
   * many keys. Default one minute; a subclass may set another.
   */
  protected readonly cleanupDelay: number = 60_000
  readonly #storage: DurableObjectStorageLike
  /** Entries read or written, by key; null for a key known to have none. */
  readonly #cache = new Map<string, Entry | null>()
  /** Reads from storage under way, by key. */
  readonly #reading = new Map<string, Promise<void>>()
  /**
   * When the alarm this object set is due; null when none is. A new instance starts with null and
   * may set an alarm later than one left by its predecessor: cleanup then waits a little longer.
   */
  #alarmAt: number | null = null

  /** Called by the runtime with the object's state (`ctx`) and the Worker's environment. */
  constructor(ctx: DurableObjectStateLike, _env?: unknown) {
    this.#storage = ctx.storage
  }

  /** Answers one `DurableObjectStore` call (see `LimiterRequest`): 200 with JSON, or 400 for a malformed call. */
  async fetch(request: Request): Promise<Response> {
    let body: unknown
    try {
      body = await request.json()
    } catch {
      return new Response('the body must be JSON', { status: 400 })
    }
    const parsed = parseRequest(body)
    if (typeof parsed === 'string') return new Response(parsed, { status: 400 })
    const { key } = parsed
    while (!this.#cache.has(key)) await this.#read(key)
    // From reading the entry in memory to the answer nothing is awaited, so the calls for a key
    // are decided one after another, each on the state the one before left: a single writer.
    return Response.json(this.#apply(parsed, this.#cache.get(key) as Entry | null))
  }

  /** Deletes every entry past its `sweepAt`, then sets the alarm for the next one due. */
  async alarm(): Promise<void> {
    // Writes made while this runs set their own alarm.
    this.#alarmAt = null
    const now = Date.now()
    let next = Number.POSITIVE_INFINITY
    let startAfter: string | undefined
    for (;;) {
      const page = await this.#storage.list<Entry>({ prefix: ENTRY_PREFIX, limit: SWEEP_PAGE, startAfter })
      const expired: string[] = []
      for (const [name, stored] of page) {
        startAfter = name
        const key = name.slice(ENTRY_PREFIX.length)
        // The copy in memory is the newer one when its write is still on its way.
        const cached = this.#cache.get(key)
        const entry = cached === undefined ? stored : cached
        if (entry === null) continue
        if (entry.sweepAt <= now) {
          expired.push(name)
          this.#remember(key, null)
        } else if (entry.sweepAt < next) {
          next = entry.sweepAt
        }
      }
      if (expired.length > 0) await this.#storage.delete(expired)
      if (page.size < SWEEP_PAGE) break
    }
    if (Number.isFinite(next)) this.#schedule(next)
  }

  /**
   * Reads a key's entry from storage into memory; callers for a key being read share the read.
   * The caller takes the entry from memory itself, in the same turn as it decides: by the time an
   * awaited result reached it, another call could have decided on the same entry.
   */
  #read(key: string): Promise<void> {
    let reading = this.#reading.get(key)
    if (reading === undefined) {
      reading = this.#storage
        .get<Entry>(ENTRY_PREFIX + key)
        .then((stored) => {
          if (!this.#cache.has(key)) this.#remember(key, stored ?? null)
        })
        .finally(() => this.#reading.delete(key))
      this.#reading.set(key, reading)
    }
    return reading
  }

  #remember(key: string, entry: Entry | null): void {
    if (!this.#cache.has(key) && this.#cache.size >= MAX_CACHED) {
      this.#cache.delete(this.#cache.keys().next().value as string)
    }
    this.#cache.set(key, entry)
  }

  #apply(request: LimiterRequest, entry: Entry | null): LimiterResponse {
    const now = request.now ?? Date.now()
    const { key, policies } = request
    const states = entry === null ? undefined : statesOf(entry, policies, now)
    switch (request.op) {
      case 'peek':
        return policies.map((policy, i) => peekOutcome(states?.[i], now, policy))
      case 'consume': {
        const result = evaluate(states, now, { id: '', policies }, request.cost)
        // Admitted: every policy's state. Denied: only those whose denial starts a block.
        const written = result.allowed ? policies.map((_, i) => i) : (result.blocks ?? [])
        if (written.length > 0) {
          const expiries = result.outcomes.map((outcome) => now + outcome.resetAfter)
          this.#write(key, entry, now, policies, written, result.states, expiries)
        }
        return result.outcomes
      }
      case 'refund': {
        if (entry === null) return null
        let changed = false
        for (let i = 0; i < policies.length; i++) {
          const policy = policies[i] as Policy
          const next = refund(states?.[i], now, policy, request.cost, request.admittedAt)
          if (next === states?.[i]) continue
          entry.states[policy.id] = next
          changed = true
        }
        // Each expiry stays: a refund never lengthens the time back to full quota.
        if (changed) this.#save(key, entry, now)
        return null
      }
      case 'penalize': {
        const next = policies.map((policy, i) => penalize(states?.[i], now, policy, request.cost))
        const expiries = policies.map((policy, i) => now + step(next[i], now, policy, 0).outcome.resetAfter)
        this.#write(key, entry, now, policies, indicesOf(policies), next, expiries)
        return null
      }
      case 'block': {
        // Only the policies with blockFor are blocked; the others are left alone.
        const until = now + request.duration
        const blocking = indicesOf(policies).filter((i) => (policies[i] as Policy).blockFor > 0)
        if (blocking.length === 0) return null
        const next: AlgorithmState[] = []
        const expiries: number[] = []
        for (const i of blocking) {
          next[i] = blockState(states?.[i], until)
          expiries[i] = now + step(next[i], now, policies[i] as Policy, 0).outcome.resetAfter
        }
        this.#write(key, entry, now, policies, blocking, next, expiries)
        return null
      }
      case 'reset': {
        if (entry === null) return null
        for (const policy of policies) {
          delete entry.states[policy.id]
          delete entry.expiries[policy.id]
        }
        this.#save(key, entry, now)
        return null
      }
    }
  }

  /** Sets the states of the policies at `indices`, with their expiries, and saves the entry. */
  #write(
    key: string,
    existing: Entry | null,
    now: number,
    policies: readonly Policy[],
    indices: readonly number[],
    states: readonly AlgorithmState[],
    expiries: readonly number[],
  ): void {
    const entry = existing ?? { states: {}, expiries: {}, sweepAt: 0 }
    for (const i of indices) {
      const { id } = policies[i] as Policy
      entry.states[id] = states[i]
      entry.expiries[id] = expiries[i] as number
    }
    this.#save(key, entry, now)
  }

  /**
   * Writes the entry to memory and storage (not awaited: the output gate holds the answer until
   * the write is durable), forgetting states already back to full quota; an entry with none left
   * is deleted. The alarm is moved earlier if this entry is due first.
   */
  #save(key: string, entry: Entry, now: number): void {
    let latest = now
    for (const id of Object.keys(entry.expiries)) {
      const expiry = entry.expiries[id] as number
      if (expiry > latest) latest = expiry
      if (expiry <= now) {
        delete entry.states[id]
        delete entry.expiries[id]
      }
    }
    if (latest === now) {
      this.#remember(key, null)
      void this.#storage.delete([ENTRY_PREFIX + key])
      return
    }
    // Due on the object's own clock: the deciding clock may be a caller's (tests).
    entry.sweepAt = Date.now() + (latest - now) + this.cleanupDelay
    this.#remember(key, entry)
    void this.#storage.put(ENTRY_PREFIX + key, entry)
    this.#schedule(entry.sweepAt)
  }

  /** Sets the alarm for `at` unless one is already set no later. */
  #schedule(at: number): void {
    if (this.#alarmAt !== null && this.#alarmAt <= at) return
    this.#alarmAt = at
    void this.#storage.setAlarm(at)
  }
}

/** The policies' indices, 0 to length - 1. */
function indicesOf(policies: readonly Policy[]): number[] {
  return policies.map((_, i) => i)
}

/** The live state of each policy for this entry, aligned with the policies; expired states read as none. */
function statesOf(entry: Entry, policies: readonly Policy[], now: number): (AlgorithmState | undefined)[] {
  return policies.map(({ id }) => ((entry.expiries[id] ?? 0) > now ? entry.states[id] : undefined))
}
