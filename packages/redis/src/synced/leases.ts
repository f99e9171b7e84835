import type { PolicySet } from '@sluice/core'
import type { Outcome } from '@sluice/core/store'
import { run, type ScriptClient, script } from '../client.js'
import { hashTag } from '../keys.js'
import { LEASE_LUA, LEASE_MODE, LEASE_OP_DOUBLES } from '../lua/lease.js'
import { LEASE_FIELDS, LEASE_POLICY_BYTES, writePolicy } from '../lua/protocol.js'
import type { RedisStore } from '../redis-store.js'
import {
  allocationOf,
  grantTarget,
  IDLE_SYNCS,
  Lease,
  type LeaseSizing,
  leasable,
  maxHeld,
  type SeenState,
} from './lease.js'
import { slotOf } from './slot.js'

const LEASE = script(LEASE_LUA)
/** A script call blocks Redis while it runs: big syncs go in parts. */
const MAX_OPS_PER_CALL = 1000
const MAX_BACKOFF_MS = 5000
/** Units a key's first take asks for at least, without an allocation (at most maxHeld). */
const FIRST_TAKE = 4
/** How much each take grows over the last. */
const TAKE_GROWTH = 4
/** Remembered states (see `Leases.#remembered`) a sync looks at to drop those full again. */
const REMEMBERED_SWEPT = 64

/**
 * One policy of one lease: units to take (> 0) or give back (< 0); `mode` (default up to):
 * LEASE_MODE's. Each op also carries the lease's view and any charge (see `#call`).
 */
interface Op {
  readonly lease: Lease
  readonly index: number
  readonly amount: number
  readonly mode?: number
}

export interface LeasesOptions {
  client: ScriptClient
  /** Its keys are the leased states: a grant comes out of the state RedisStore decides on. */
  redis: RedisStore
  interval: number
  maxKeys: number
  /** The allocation and the fleet's cap, as shares of each burst. */
  sizing: LeaseSizing
  /** This node's part of the fleet (`weight`, else 1 ÷ live nodes): of the allocation and of the cap. */
  part: () => number
  /** Tests: the clock in epoch ms, sent to the script instead of Redis `TIME`. */
  now: (() => number) | undefined
  /** How long a request may wait for a grant before it is decided `alone`. */
  timeout: number
  /** Decides one request in Redis, for a key this node holds no lease of (at `maxKeys`). */
  exactly(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]>
  /** This node's share of a set while Redis does not answer (see `Lease.spendAlone`). */
  share(set: PolicySet): PolicySet
}

/**
 * Token bucket and GCRA by leasing (seed 001 §4.4 (5)): a node takes a grant of units out of the
 * key's state in Redis, spends it locally in the same tick, and gives back what it did not use.
 * A key's first take asks for this node's part of the allocation (`sizing`). Each sync (one
 * LEASE_LUA call per `interval` for every key that needs one, per slot on a Cluster) tops each
 * grant up to what the node asks for in two intervals, at most its part of the fleet's cap, and
 * gives back what is beyond twice that or beyond its part (which shrinks as nodes join). A node
 * whose part of the cap is under the cost decides the key per request. A request that finds too
 * little held waits for a take (one call shared by the requests of that event-loop turn). When
 * Redis gives less than asked, the quota is low: the node spends what it holds, then decides the
 * key per request (`exactly`) until a sync's grant comes back whole. Leases are per (set, key): two sets on one state (a named
 * policy's plans, or one policy in two sets) each hold their own grant, taken from the state, so
 * nothing is counted twice; a key's new lease gives the others' grants on its state back first.
 * Through Redis faults, see `Lease.spendAlone` and LEASE_LUA.
 */
export class Leases {
  readonly #o: LeasesOptions
  readonly #cluster: boolean
  readonly #leases = new Map<PolicySet, Map<string, Lease>>()
  readonly #served = new WeakMap<PolicySet, boolean>()
  #size = 0
  #queued: Op[] = []
  #waiting: { resolve: () => void; reject: (error: unknown) => void }[] = []
  #flushScheduled = false
  #timer: ReturnType<typeof setInterval> | undefined
  #syncing: Promise<void> | undefined
  #failures = 0
  #nextAttempt = 0
  #closed = false
  #unreturned = 0
  /**
   * What leases forgotten while idle last read of their states, by Redis key, until those states
   * would be full again (at most `maxKeys`, oldest out): a lease made again for the key starts
   * from it, so a state Redis forgot meanwhile is rebuilt from it too (see LEASE_LUA).
   */
  readonly #remembered = new Map<string, { view: readonly [number, number]; seen: SeenState; fullAt: number }>()

  constructor(options: LeasesOptions) {
    this.#o = options
    this.#cluster = options.client.cluster
  }

  /** Whether every policy of the set is leased (see `leasable`). */
  serves(set: PolicySet): boolean {
    let served = this.#served.get(set)
    if (served === undefined) {
      served = set.policies.every(leasable)
      this.#served.set(set, served)
    }
    return served
  }

  consume(key: string, set: PolicySet, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    const lease = this.#leaseOf(key, set)
    if (lease === undefined) return this.#o.exactly(key, set, cost)
    lease.demand.asked += cost
    const spent = lease.spend(this.#local(), cost)
    if (spent !== undefined) return spent
    return lease.exact ? this.#exactly(lease, cost) : this.#take(lease, key, cost)
  }

  /**
   * A decision while Redis does not answer, for a key this node leases (see `Lease.spendAlone`:
   * what is held, then this node's share of what the bucket held when last heard); undefined for
   * a key it does not.
   */
  alone(key: string, set: PolicySet, cost: number): readonly Outcome[] | undefined {
    const lease = this.#leases.get(set)?.get(key)
    if (lease === undefined) return undefined
    // Demand while Redis is away keeps the lease (and its view) from idling out.
    lease.demand.asked += cost
    return lease.spendAlone(this.#local(), this.#o.share(set), cost)
  }

  /**
   * Redis's states of the key start again full on every node: written full (one call) for long
   * enough that no other node's view of them, taken before, rebuilds them (see LEASE_LUA).
   */
  async reset(key: string, set: PolicySet): Promise<void> {
    this.forget(key, set)
    const lease = new Lease(
      this.#o.redis.keysOf(key, set),
      this.#cluster ? slotOf(hashTag(key)) : 0,
      set,
      this.#local(),
    )
    await this.#send(set.policies.map((_, index) => ({ lease, index, amount: 0, mode: LEASE_MODE.reset })))
  }

  /** Forgets what this node holds of the key (a reset: Redis's state starts again, the grant with it). */
  forget(key: string, set: PolicySet): void {
    if (this.#leases.get(set)?.delete(key)) this.#size--
  }

  /** Runs one sync now (after any in flight), resolving when it is done; never rejects. */
  async sync(): Promise<void> {
    await this.#syncing
    this.#tick()
    await this.#syncing
  }

  /** Keys whose held units a close could not give back (yet: a late reply still lands). */
  get unreturned(): number {
    return this.#unreturned
  }

  /** Stops the syncs and gives back everything held (one attempt). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#stop()
    // Counted as not given back from the start: the caller may stop waiting before the sync in flight ends.
    this.#unreturned = this.#holding()
    await this.#syncing
    this.#unreturned = this.#holding()
    const ops: Op[] = []
    for (const byKey of this.#leases.values()) for (const lease of byKey.values()) this.#giveBackAll(lease, ops)
    this.#leases.clear()
    // Not queued on a client without a connection: it could wait for one forever.
    if (this.#o.client.connected()) {
      await this.#send(ops).then(
        () => {
          this.#unreturned = 0
        },
        () => undefined,
      )
    }
  }

  /** Leases holding units. */
  #holding(): number {
    let holding = 0
    for (const byKey of this.#leases.values())
      for (const lease of byKey.values()) if (lease.held.some((h) => h > 0)) holding++
    return holding
  }

  /**
   * Asks Redis for enough units for this request and the key's rate, or more than the last take
   * (see FIRST_TAKE), shared with requests that come meanwhile.
   * A take not answered within `timeout`, or failed, leaves the request to `alone`; a late answer
   * still adds its grant.
   */
  #take(lease: Lease, key: string, cost: number): Promise<readonly Outcome[]> {
    if (lease.pending === undefined) {
      const ops: Op[] = []
      const part = this.#o.part()
      for (const [index, policy] of lease.set.policies.entries()) {
        const held = lease.held[index] as number
        if (held >= cost) continue
        const most = maxHeld(policy, this.#o.sizing, part)
        // This node's part of the cap cannot hold the cost: nothing is taken, the key goes per
        // request, after the give-backs queued in this turn (a plan change's, see #giveBackShared).
        if (most < cost) return this.#afterQueued().then(() => this.#o.exactly(key, lease.set, cost))
        // A key's first take asks its allocation or FIRST_TAKE, each next one TAKE_GROWTH × the
        // last (at most `most`): a key that starts busy reaches its size in a few takes, before
        // the syncs have measured its rate (bench:distributed's "buckets" from cold, 2 processes:
        // 21–47 k decisions/s per process starting at 1 and doubling, 184–281 k with this rule).
        const first = lease.lastTake === 0 ? allocationOf(policy, this.#o.sizing, part) : 0
        const grown = Math.min(most, Math.max(FIRST_TAKE, first, TAKE_GROWTH * lease.lastTake))
        const want = Math.max(cost, grantTarget(lease.demand.rate, this.#o.interval, most), grown)
        lease.lastTake = want
        ops.push({ lease, index, amount: want - held })
      }
      const pending = this.#enqueue(ops).then(
        () => true,
        () => false,
      )
      lease.pending = pending
      void pending.then(() => {
        if (lease.pending === pending) lease.pending = undefined
      })
    }
    return this.#within(lease.pending).then((answered) => {
      // Not answered in time, or failed: this request is decided without Redis.
      if (answered !== true) return lease.spendAlone(this.#local(), this.#o.share(lease.set), cost)
      const spent = lease.spend(this.#local(), cost)
      if (spent !== undefined) return spent
      // Redis gave less than asked (low quota: per request from now on), or others spent it first.
      return lease.exact ? this.#exactly(lease, cost) : this.#take(lease, key, cost)
    })
  }

  /**
   * A request on a key whose quota is low: its cost taken whole from Redis (every policy), or
   * denied. Through the lease script, so a state Redis forgot is rebuilt first (see LEASE_LUA).
   */
  #exactly(lease: Lease, cost: number): readonly Outcome[] | Promise<readonly Outcome[]> {
    const local = this.#local()
    if (local >= lease.deniedAt && local < lease.deniedUntil) return lease.refuse(local, cost)
    const ops: Op[] = []
    for (const [index, held] of lease.held.entries()) {
      if (held < cost) ops.push({ lease, index, amount: cost - held, mode: LEASE_MODE.whole })
    }
    const answered = this.#enqueue(ops).then(
      () => true,
      () => false,
    )
    return this.#within(answered).then((ok) => {
      if (ok !== true) return lease.spendAlone(this.#local(), this.#o.share(lease.set), cost)
      return lease.spend(this.#local(), cost) ?? lease.refuse(this.#local(), cost)
    })
  }

  /** What `pending` settles to, or 'late' when the timeout comes first. */
  #within(pending: Promise<boolean>): Promise<boolean | 'late'> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve('late'), this.#o.timeout)
      timer.unref?.()
      void pending.then((ok) => {
        clearTimeout(timer)
        resolve(ok)
      })
    })
  }

  #leaseOf(key: string, set: PolicySet): Lease | undefined {
    let byKey = this.#leases.get(set)
    if (byKey === undefined) {
      byKey = new Map()
      this.#leases.set(set, byKey)
    }
    let lease = byKey.get(key)
    if (lease !== undefined) return lease
    // At the bound, keys beyond it are decided per request: nothing held is dropped to make room.
    if (this.#size >= this.#o.maxKeys) return undefined
    this.#start()
    lease = new Lease(this.#o.redis.keysOf(key, set), this.#cluster ? slotOf(hashTag(key)) : 0, set, this.#local())
    this.#recall(lease)
    this.#giveBackShared(key, lease)
    byKey.set(key, lease)
    this.#size++
    return lease
  }

  /**
   * A key's new lease under one set gives back what this node holds of the same states under other
   * sets, queued before its first take (one call), and clears their demand so the syncs top none
   * of them up again: a named policy whose plan changed is a new set on the same state, and the old
   * plan's grant would otherwise count as used until it idled out. A set still in use takes again
   * at its next request, and its rate comes back at the next sync.
   */
  #giveBackShared(key: string, lease: Lease): void {
    const ops: Op[] = []
    for (const [set, byKey] of this.#leases) {
      const other = set === lease.set ? undefined : byKey.get(key)
      if (other === undefined || !other.keys.some((state) => lease.keys.includes(state))) continue
      other.demand.clear()
      for (const [index, state] of other.keys.entries()) {
        const held = other.held[index] as number
        if (held > 0 && lease.keys.includes(state)) this.#push(ops, other, index, -held)
      }
    }
    // A failed give-back is not sent again (see #push); the take after it answers for itself.
    if (ops.length > 0) this.#enqueue(ops).catch(() => undefined)
  }

  #start(): void {
    if (this.#timer !== undefined || this.#closed) return
    this.#timer = setInterval(this.#tick, this.#o.interval)
    this.#timer.unref?.()
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer)
    this.#timer = undefined
  }

  /**
   * One sync: per lease, the interval's demand goes into its rate; the grant is topped up or given
   * back to fit it; a lease idle for IDLE_SYNCS syncs gives back all it holds and is forgotten.
   */
  readonly #tick = (): void => {
    // Every lease idle long enough is forgotten: an idle store keeps no lease timer (the next lease starts it).
    if (this.#size === 0 && this.#syncing === undefined) {
      this.#stop()
      return
    }
    const local = this.#local()
    this.#forgetFull(local)
    if (this.#closed || this.#syncing !== undefined || local < this.#nextAttempt) return
    const ops: Op[] = []
    const part = this.#o.part()
    for (const byKey of this.#leases.values()) {
      for (const [key, lease] of byKey) {
        lease.demand.rollover(local)
        if (lease.pending !== undefined) continue
        // A lease that still owes a charge stays until Redis has it.
        if (lease.demand.idle >= IDLE_SYNCS && !lease.owes()) {
          this.#giveBackAll(lease, ops)
          this.#remember(lease, local)
          byKey.delete(key)
          this.#size--
          continue
        }
        const most = lease.set.policies.map((policy) => maxHeld(policy, this.#o.sizing, part))
        for (const [index, amount] of lease.adjustments(this.#o.interval, most).entries()) {
          // What was admitted alone goes to be charged even with nothing to take or give back.
          if (amount !== 0 || (lease.charge[index] as number) > 0) this.#push(ops, lease, index, amount)
        }
      }
    }
    if (ops.length === 0) return
    const syncing: Promise<void> = this.#send(ops)
      .then(
        () => {
          this.#failures = 0
        },
        () => {
          this.#failures++
          this.#nextAttempt = this.#local() + Math.min(MAX_BACKOFF_MS, this.#o.interval * 2 ** this.#failures)
        },
      )
      .finally(() => {
        if (this.#syncing === syncing) this.#syncing = undefined
      })
    this.#syncing = syncing
  }

  /** Keeps what a lease forgotten while idle last read of each state not yet full again (see `#remembered`). */
  #remember(lease: Lease, local: number): void {
    for (const [index, policy] of lease.set.policies.entries()) {
      const view = lease.view[index]
      const seen = lease.seen[index]
      if (view === undefined || seen === undefined) continue
      // A token bucket's held units went back with the lease: its full time is read without them (later, so safe).
      const fullAt =
        policy.algorithm === 'token-bucket'
          ? seen.updated + (policy.burst * policy.window - seen.tokensOrTat) / policy.limit
          : seen.tokensOrTat
      if (fullAt <= local) continue
      const key = lease.keys[index] as string
      this.#remembered.delete(key)
      this.#remembered.set(key, { view, seen, fullAt })
      if (this.#remembered.size > this.#o.maxKeys) {
        const oldest = this.#remembered.keys().next()
        if (oldest.done !== true) this.#remembered.delete(oldest.value)
      }
    }
  }

  /** Drops some remembered states full again by now, oldest first (a slice a sync; `maxKeys` bounds the rest). */
  #forgetFull(local: number): void {
    let visited = 0
    for (const [key, { fullAt }] of this.#remembered) {
      if (++visited > REMEMBERED_SWEPT) break
      if (fullAt <= local) this.#remembered.delete(key)
    }
  }

  /** A new lease starts from what a forgotten one remembered of its states, while they are not yet full. */
  #recall(lease: Lease): void {
    if (this.#remembered.size === 0) return
    const local = this.#local()
    for (const [index, key] of lease.keys.entries()) {
      const remembered = this.#remembered.get(key)
      if (remembered === undefined) continue
      this.#remembered.delete(key)
      if (remembered.fullAt <= local) continue
      lease.view[index] = remembered.view
      lease.seen[index] = remembered.seen
    }
  }

  /** Gives back all held, and sends any charge left (a lease forgotten or closed owes nothing unsent). */
  #giveBackAll(lease: Lease, ops: Op[]): void {
    for (const [index, held] of lease.held.entries()) {
      if (held > 0 || (lease.charge[index] as number) > 0) this.#push(ops, lease, index, -held)
    }
  }

  /**
   * Adds an op; a give-back leaves `held` at once, so what goes back is never spent too. A
   * give-back whose call fails is not sent again: Redis may have run it, and a second would count
   * it twice. Those units are lost (under-admission, at most the grant).
   */
  #push(ops: Op[], lease: Lease, index: number, amount: number): void {
    if (amount < 0) lease.held[index] = (lease.held[index] as number) + amount
    ops.push({ lease, index, amount })
  }

  /** Takes of this event-loop turn go in one call (per slot), sent after the turn's other work. */
  #enqueue(ops: Op[]): Promise<void> {
    const queued = this.#queued
    for (const op of ops) queued.push(op)
    const sent = new Promise<void>((resolve, reject) => {
      this.#waiting.push({ resolve, reject })
    })
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(this.#flush)
    }
    return sent
  }

  /** Resolves once the ops queued so far are sent (or failed: what follows answers for itself). */
  #afterQueued(): Promise<void> {
    return this.#queued.length === 0 ? Promise.resolve() : this.#enqueue([]).catch(() => undefined)
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false
    const ops = this.#queued
    const waiting = this.#waiting
    this.#queued = []
    this.#waiting = []
    this.#send(ops).then(
      () => {
        for (const w of waiting) w.resolve()
      },
      (error: unknown) => {
        for (const w of waiting) w.reject(error)
      },
    )
  }

  /** One LEASE_LUA call per slot and per MAX_OPS_PER_CALL ops; rejects when any part failed. */
  #send(ops: Op[]): Promise<void> {
    if (ops.length === 0) return Promise.resolve()
    const groups = new Map<number, Op[]>()
    for (const op of ops) {
      const slot = this.#cluster ? op.lease.slot : 0
      const group = groups.get(slot)
      if (group === undefined) groups.set(slot, [op])
      else group.push(op)
    }
    const calls: Promise<void>[] = []
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_OPS_PER_CALL)
        calls.push(this.#call(group.slice(i, i + MAX_OPS_PER_CALL)))
    }
    return Promise.all(calls).then(() => undefined)
  }

  /**
   * One LEASE_LUA call. Each op carries its lease's view (the state the last reply showed, to
   * rebuild it if Redis forgot it) and what the lease admitted alone since it was last charged;
   * a charge that fails goes with the next call (sent twice, it under-admits: never the reverse).
   */
  async #call(ops: Op[]): Promise<void> {
    const keys: string[] = []
    const policies = Buffer.alloc(LEASE_POLICY_BYTES * ops.length)
    const records = Buffer.alloc(8 * LEASE_OP_DOUBLES * ops.length)
    const charges: number[] = ops.map(() => 0)
    for (const [i, op] of ops.entries()) {
      const { lease, index } = op
      const policy = lease.set.policies[index]
      if (policy === undefined) continue
      keys.push(lease.keys[index] as string)
      writePolicy(policies, LEASE_POLICY_BYTES * i, policy, LEASE_FIELDS)
      const charge = lease.charge[index] as number
      lease.charge[index] = 0
      lease.charging[index] = (lease.charging[index] as number) + charge
      charges[i] = charge
      const view = lease.view[index]
      const at = 8 * LEASE_OP_DOUBLES * i
      records.writeDoubleLE(op.amount, at)
      records.writeDoubleLE(charge, at + 8)
      records.writeDoubleLE(op.mode ?? LEASE_MODE.upTo, at + 16)
      records.writeDoubleLE(view === undefined ? 0 : 1, at + 24)
      records.writeDoubleLE(view?.[0] ?? 0, at + 32)
      records.writeDoubleLE(view?.[1] ?? 0, at + 40)
    }
    const args: (Buffer | string)[] = [policies, records]
    if (this.#o.now !== undefined) args.push(String(this.#o.now()))
    let reply: Buffer
    try {
      reply = (await run(this.#o.client, LEASE, keys, args, true)) as Buffer
    } catch (error) {
      for (const [i, { lease, index }] of ops.entries()) {
        const charge = charges[i] as number
        lease.charging[index] = (lease.charging[index] as number) - charge
        lease.charge[index] = (lease.charge[index] as number) + charge
      }
      throw error
    }
    // Redis's clock to this node's: the states' times are read against the local clock.
    const shift = this.#local() - reply.readDoubleLE(0)
    const short = new Map<Lease, boolean>()
    for (const [i, op] of ops.entries()) {
      const at = 8 + 24 * i
      const granted = reply.readDoubleLE(at)
      const lease = op.lease
      const policy = lease.set.policies[op.index]
      lease.held[op.index] = (lease.held[op.index] as number) + granted
      lease.charging[op.index] = (lease.charging[op.index] as number) - (charges[i] as number)
      const first = reply.readDoubleLE(at + 8)
      const second = reply.readDoubleLE(at + 16)
      lease.view[op.index] = [first, second]
      lease.seen[op.index] =
        policy?.algorithm === 'token-bucket'
          ? { tokensOrTat: first, updated: second + shift }
          : { tokensOrTat: first + shift, updated: 0 }
      // Redis answers: the next outage cuts this node's share from this reply.
      lease.alone = undefined
      // Only a grant of up to what was asked tells how much is left; a whole take's does not.
      if (op.amount > 0 && op.mode !== LEASE_MODE.whole)
        short.set(lease, (short.get(lease) ?? false) || granted < op.amount)
    }
    for (const [lease, wasShort] of short) lease.exact = wasShort
  }

  #local(): number {
    return this.#o.now === undefined ? Date.now() : this.#o.now()
  }
}
