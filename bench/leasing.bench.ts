/**
 * Leasing against count-and-sync, in simulated time (deterministic, no Redis): one hot key on N =
 * 2, 4, 8 nodes, its traffic split 90/10 (one node 90 %, the rest share 10 %) or by Zipf (node k's
 * part ∝ 1/k), offered at 2× the limit (over-admission shows) and at 1× (under-admission shows:
 * quota held where the traffic is not). Per scheme: central-store calls per decision, and admitted
 * against the exact reference (one central decision per request on the same arrivals): over and
 * under, in % of the reference, over the run and in its worst window.
 *
 * Schemes:
 * - token bucket, leased: SyncedStore's rule (packages/redis/src/synced/lease.ts: the `Lease`'s
 *   demand and adjustments, `maxHeld`, `allocationOf`, `grantTarget`; leases.ts's first-take
 *   growth; LEASE_LUA's tail rule), with the default sizes and with `{ allocation: 0.5, cap: 0.5 }`.
 * - fixed window, count-and-sync: a model of SyncedStore's window rule (local counts sent each
 *   interval; a key goes per request once its count plus what the others likely added unseen passes
 *   `exactAbove` 0.8 of the limit, or once denied anywhere in the window).
 * - fixed window, leased: a prototype (here only) of seed 001 §4.4 (5) for windows: grants out of
 *   the window's remaining count, sized by rate over min(two intervals, time left in the window),
 *   the fleet cap and allocation as for buckets, under 10 % left at most half of it; grants end
 *   with their window.
 *
 * Then a node killed mid-run (the busiest, at 1.55 s; its traffic moves to the others): what it
 * strands and for how long. Takes are answered at once here (no round trip), so a real fleet's
 * figures differ by what arrives while a take is in flight.
 *
 * With `--real`, the call costs again on real processes (test/synced/worker.ts, one SyncedStore
 * each, the real clock) on a private redis-server this script starts and stops by PID: script
 * calls per decision (INFO commandstats) and admitted ÷ offered, for the fixed window (counted and
 * synced) and the leased token bucket, 3 s per row.
 *
 *   pnpm bench:leasing [--seconds 10] [--real]
 */
import { type Policy, parsePolicy } from '@sluice/core'
import { Redis } from 'ioredis'
import {
  allocationOf,
  DEFAULT_LEASE_SIZING,
  grantTarget,
  IDLE_SYNCS,
  Lease,
  type LeaseSizing,
  maxHeld,
} from '../packages/redis/src/synced/lease.js'
import { commandsBetween, parseCommandStats, startRedisServer, uniquePrefix } from '../test/support/redis.js'
import { startWorker } from '../test/synced/fleet.js'

const LIMIT = 1000
const WINDOW = 1000
const INTERVAL = 100
/** How long a node missing its heartbeats still counts as live (packages/redis/src/synced/heartbeat.ts). */
const NODE_TTL_MS = 5000
const EXACT_ABOVE = 0.8
const FIRST_TAKE = 4
const TAKE_GROWTH = 4
const KILL_AT = 1550
const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] ?? 10) || 10
const DURATION = seconds * 1000

const policy: Policy = parsePolicy({ limit: LIMIT, window: WINDOW, algorithm: 'token-bucket' })

/** LEASE_LUA's grant: at most what is left; under 10 % of the burst left, at most half of it. */
function grantOf(available: number, burst: number, want: number): number {
  const most = available < 0.1 * burst ? Math.floor(available / 2) : available
  return Math.max(0, Math.min(most, want))
}

/** What every scheme does per node: decide one request at `now`, and its interval's sync. */
interface Scheme {
  decide(node: number, now: number): boolean
  sync(node: number, now: number): void
  /** The node is gone: what it held is stranded. */
  kill(node: number, now: number): void
  /** Central calls: a request's own (it waits for the answer) and the syncs'. */
  calls: number
  /** Requests that waited for a central call (a take or a decision per request). */
  waits: number
  /** Units held out of the central state by live nodes now (0 for count-and-sync). */
  held(): number
}

/** The reference: one central decision per request. */
function exactBucket(): Scheme {
  let tokens = LIMIT
  let updated = 0
  return {
    calls: 0,
    waits: 0,
    decide(_node, now) {
      this.calls++
      this.waits++
      tokens = Math.min(LIMIT, tokens + ((now - updated) * LIMIT) / WINDOW)
      updated = now
      if (tokens < 1) return false
      tokens -= 1
      return true
    },
    sync() {},
    kill() {},
    held: () => 0,
  }
}

function exactWindow(): Scheme {
  let start = 0
  let count = 0
  return {
    calls: 0,
    waits: 0,
    decide(_node, now) {
      this.calls++
      this.waits++
      const s = now - (now % WINDOW)
      if (s !== start) [start, count] = [s, 0]
      if (count >= LIMIT) return false
      count++
      return true
    },
    sync() {},
    kill() {},
    held: () => 0,
  }
}

/** The central token bucket a lease takes from. */
class CentralBucket {
  tokens = LIMIT
  updated = 0
  refill(now: number): void {
    this.tokens = Math.min(LIMIT, this.tokens + ((now - this.updated) * LIMIT) / WINDOW)
    this.updated = now
  }
  grant(now: number, want: number): number {
    this.refill(now)
    const granted = grantOf(Math.floor(this.tokens), LIMIT, want)
    this.tokens -= granted
    return granted
  }
  giveBack(now: number, units: number): void {
    this.refill(now)
    this.tokens = Math.min(LIMIT, this.tokens + units)
  }
  decide(now: number): boolean {
    this.refill(now)
    if (this.tokens < 1) return false
    this.tokens -= 1
    return true
  }
}

/** Token bucket leased as SyncedStore leases it; `live()` counts nodes as the heartbeats do. */
function leasedBucket(nodes: number, sizing: LeaseSizing, live: (now: number) => number): Scheme {
  const central = new CentralBucket()
  const set = { policies: [policy], id: 'bench' } as never
  const leases = Array.from({ length: nodes }, () => new Lease(['k'], 0, set, 0))
  const dead = new Set<number>()
  const part = (now: number) => 1 / live(now)
  const scheme: Scheme = {
    calls: 0,
    waits: 0,
    decide(node, now) {
      const lease = leases[node] as Lease
      lease.demand.asked++
      if ((lease.held[0] as number) >= 1) {
        lease.held[0] = (lease.held[0] as number) - 1
        return true
      }
      const most = maxHeld(policy, sizing, part(now))
      if (lease.exact || most < 1) {
        scheme.calls++
        scheme.waits++
        return central.decide(now)
      }
      const first = lease.lastTake === 0 ? allocationOf(policy, sizing, part(now)) : 0
      const grown = Math.min(most, Math.max(FIRST_TAKE, first, TAKE_GROWTH * lease.lastTake))
      const want = Math.max(1, grantTarget(lease.demand.rate, INTERVAL, most), grown)
      lease.lastTake = want
      const asked = want - (lease.held[0] as number)
      scheme.calls++
      scheme.waits++
      const granted = central.grant(now, asked)
      lease.held[0] = (lease.held[0] as number) + granted
      lease.exact = granted < asked
      if ((lease.held[0] as number) >= 1) {
        lease.held[0] = (lease.held[0] as number) - 1
        return true
      }
      scheme.calls++
      scheme.waits++
      return central.decide(now)
    },
    sync(node, now) {
      const lease = leases[node] as Lease
      lease.demand.rollover(now)
      if (lease.demand.idle >= IDLE_SYNCS) return
      const [amount] = lease.adjustments(INTERVAL, [maxHeld(policy, sizing, part(now))]) as [number]
      if (amount === 0) return
      scheme.calls++
      if (amount > 0) {
        const granted = central.grant(now, amount)
        lease.held[0] = (lease.held[0] as number) + granted
        lease.exact = granted < amount
      } else {
        lease.held[0] = (lease.held[0] as number) + amount
        central.giveBack(now, -amount)
      }
    },
    kill(node) {
      dead.add(node)
    },
    held: () => leases.reduce((sum, l, i) => sum + (dead.has(i) ? 0 : (l.held[0] as number)), 0),
  }
  return scheme
}

/** A model of SyncedStore's fixed window: local counts synced each interval, per request near the limit. */
function countAndSync(nodes: number): Scheme {
  let start = 0
  let central = 0
  let deniedAt = -1
  const node = Array.from({ length: nodes }, () => ({ unsynced: 0, seen: 0, heard: false, own: 0, othersRate: 0 }))
  const turn = (now: number) => {
    const s = now - (now % WINDOW)
    if (s === start) return
    start = s
    central = 0
    for (const n of node) Object.assign(n, { unsynced: 0, seen: 0, heard: false, own: 0, othersRate: 0 })
  }
  const scheme: Scheme = {
    calls: 0,
    waits: 0,
    decide(i, now) {
      turn(now)
      const n = node[i] as (typeof node)[number]
      const used = n.seen + n.unsynced
      const elapsed = Math.max(now - start, INTERVAL)
      // SyncedStore's `unseen`: what the others likely added since this node last heard, over ~2 intervals.
      const unseen = Math.max(((nodes - 1) * n.own) / elapsed, n.othersRate) * 2 * INTERVAL
      const threshold = n.heard ? EXACT_ABOVE * LIMIT : (EXACT_ABOVE * LIMIT) / nodes
      if (deniedAt === start || used + 1 + unseen > threshold) {
        scheme.calls++
        scheme.waits++
        central += n.unsynced
        n.unsynced = 0
        if (central >= LIMIT) {
          deniedAt = start
          n.seen = central
          return false
        }
        central++
        n.own++
        n.seen = central
        return true
      }
      if (used >= LIMIT) return false
      n.unsynced++
      n.own++
      return true
    },
    sync(i, now) {
      turn(now)
      const n = node[i] as (typeof node)[number]
      scheme.calls++
      central += n.unsynced
      n.othersRate = Math.max(0, central - n.seen - n.unsynced) / INTERVAL
      n.unsynced = 0
      n.seen = central
      n.heard = true
    },
    kill(i) {
      // Its unsynced counts never reach the centre: the others may admit them again.
      ;(node[i] as (typeof node)[number]).unsynced = 0
    },
    held: () => 0,
  }
  return scheme
}

/** The prototype: a fixed window leased, grants sized by rate over the time left in the window. */
function leasedWindow(nodes: number, sizing: LeaseSizing, live: (now: number) => number): Scheme {
  let start = 0
  let remaining = LIMIT
  const dead = new Set<number>()
  const node = Array.from({ length: nodes }, () => ({
    held: 0,
    asked: 0,
    rate: 0,
    since: 0,
    lastTake: 0,
    exact: false,
  }))
  const part = (now: number) => 1 / live(now)
  const turn = (now: number) => {
    const s = now - (now % WINDOW)
    if (s === start) return
    start = s
    remaining = LIMIT
    // Grants end with their window.
    for (const n of node) Object.assign(n, { held: 0, lastTake: 0, exact: false })
  }
  const target = (n: (typeof node)[number], now: number, most: number) => {
    if (n.rate <= 0) return 0
    const horizon = Math.min(2 * INTERVAL, start + WINDOW - now)
    return Math.min(most, Math.ceil(n.rate * horizon))
  }
  const grant = (want: number) => {
    const granted = grantOf(remaining, LIMIT, want)
    remaining -= granted
    return granted
  }
  const scheme: Scheme = {
    calls: 0,
    waits: 0,
    decide(i, now) {
      turn(now)
      const n = node[i] as (typeof node)[number]
      n.asked++
      if (n.held >= 1) {
        n.held--
        return true
      }
      const most = maxHeld(policy, sizing, part(now))
      if (!n.exact && most >= 1) {
        const first = n.lastTake === 0 ? allocationOf(policy, sizing, part(now)) : 0
        const want = Math.max(
          1,
          target(n, now, most),
          Math.min(most, Math.max(FIRST_TAKE, first, TAKE_GROWTH * n.lastTake)),
        )
        n.lastTake = want
        scheme.calls++
        scheme.waits++
        const granted = grant(want)
        n.held += granted
        n.exact = granted < want
        if (n.held >= 1) {
          n.held--
          return true
        }
      }
      scheme.calls++
      scheme.waits++
      if (remaining < 1) return false
      remaining--
      return true
    },
    sync(i, now) {
      turn(now)
      const n = node[i] as (typeof node)[number]
      const latest = n.asked / Math.max(1, now - n.since)
      n.rate = n.rate === 0 ? latest : (n.rate + latest) / 2
      n.asked = 0
      n.since = now
      const most = maxHeld(policy, sizing, part(now))
      const want = target(n, now, most)
      let amount = 0
      if (n.held < want) amount = want - n.held
      else if (n.held > 2 * want || n.held > most) amount = want - n.held
      if (amount === 0) return
      scheme.calls++
      if (amount > 0) {
        const granted = grant(amount)
        n.held += granted
        n.exact = granted < amount
      } else {
        n.held += amount
        remaining -= amount
      }
    },
    kill(i) {
      dead.add(i)
    },
    held: () => node.reduce((sum, n, i) => sum + (dead.has(i) ? 0 : n.held), 0),
  }
  return scheme
}

type Traffic = '90/10' | 'Zipf'
function partsOf(traffic: Traffic, nodes: number): number[] {
  if (traffic === '90/10') return Array.from({ length: nodes }, (_, i) => (i === 0 ? 0.9 : 0.1 / (nodes - 1)))
  const raw = Array.from({ length: nodes }, (_, i) => 1 / (i + 1))
  const sum = raw.reduce((a, b) => a + b, 0)
  return raw.map((r) => r / sum)
}

interface Run {
  admitted: number[]
  offered: number
  calls: number
  waits: number
  decisions: number
  /** Units the fleet held at the kill, and when the last of them came back (ms after it). */
  stranded: number
}

/**
 * One run on a fixed arrival sequence (per node, its part of `load` × the rate, as whole requests
 * from running sums: the same for every scheme). Admitted per window.
 */
function simulate(scheme: Scheme, parts: number[], load: number, kill: boolean): Run {
  const nodes = parts.length
  const due = parts.map(() => 0)
  const admitted = Array.from({ length: Math.ceil(DURATION / WINDOW) }, () => 0)
  let offered = 0
  let decisions = 0
  let stranded = 0
  const alive = parts.map(() => true)
  let share = parts.slice()
  for (let now = 1; now <= DURATION; now++) {
    if (kill && now === KILL_AT) {
      stranded = scheme.held()
      scheme.kill(0, now)
      stranded -= scheme.held()
      alive[0] = false
      const rest = 1 - (parts[0] as number)
      share = parts.map((p, i) => (i === 0 ? 0 : p / rest))
    }
    for (let i = 0; i < nodes; i++) {
      if (!alive[i]) continue
      due[i] = (due[i] as number) + ((share[i] as number) * load * LIMIT) / WINDOW
      while ((due[i] as number) >= 1) {
        due[i] = (due[i] as number) - 1
        offered++
        decisions++
        const w = Math.floor((now - 1) / WINDOW)
        if (scheme.decide(i, now)) admitted[w] = (admitted[w] as number) + 1
      }
    }
    // Each node syncs every interval, the nodes' syncs spread over it.
    for (let i = 0; i < nodes; i++)
      if (alive[i] && (now + Math.floor((i * INTERVAL) / nodes)) % INTERVAL === 0) scheme.sync(i, now)
  }
  return { admitted, offered, calls: scheme.calls, waits: scheme.waits, decisions, stranded }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
const pct = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)} %`

/** Over (+) or under (−) the reference, over the run and its worst window each way. */
function against(run: Run, reference: Run): { total: number; worstOver: number; worstUnder: number } {
  const total = (100 * (sum(run.admitted) - sum(reference.admitted))) / sum(reference.admitted)
  let worstOver = 0
  let worstUnder = 0
  for (const [w, a] of run.admitted.entries()) {
    const r = reference.admitted[w] as number
    if (r === 0) continue
    worstOver = Math.max(worstOver, (100 * (a - r)) / r)
    worstUnder = Math.min(worstUnder, (100 * (a - r)) / r)
  }
  return { total, worstOver, worstUnder }
}

const ALLOCATED: LeaseSizing = { allocation: 0.5, cap: 0.5 }
type Maker = (nodes: number, live: (now: number) => number) => Scheme
const SCHEMES: { name: string; kind: 'bucket' | 'window'; make: Maker }[] = [
  { name: 'token bucket, exact (RedisStore)', kind: 'bucket', make: () => exactBucket() },
  {
    name: 'token bucket, leased (cap 0.1)',
    kind: 'bucket',
    make: (n, live) => leasedBucket(n, DEFAULT_LEASE_SIZING, live),
  },
  {
    name: 'token bucket, leased (allocation 0.5, cap 0.5)',
    kind: 'bucket',
    make: (n, live) => leasedBucket(n, ALLOCATED, live),
  },
  { name: 'fixed window, exact (RedisStore)', kind: 'window', make: () => exactWindow() },
  { name: 'fixed window, count-and-sync (SyncedStore)', kind: 'window', make: (n) => countAndSync(n) },
  {
    name: 'fixed window, leased (prototype, cap 0.1)',
    kind: 'window',
    make: (n, live) => leasedWindow(n, DEFAULT_LEASE_SIZING, live),
  },
  {
    name: 'fixed window, leased (prototype, allocation 0.5, cap 0.5)',
    kind: 'window',
    make: (n, live) => leasedWindow(n, ALLOCATED, live),
  },
]

const lines: string[] = []
const print = (line: string) => {
  lines.push(line)
  console.log(line)
}
print(
  `Leasing, simulated: one key, limit ${LIMIT} per ${WINDOW} ms (bucket: burst ${LIMIT}), interval ${INTERVAL} ms, ${seconds} s`,
)
print('')
for (const load of [2, 1]) {
  print(`Offered ${load}× the limit:`)
  print('')
  print(
    '| scheme | nodes | traffic | central calls / decision | requests that wait | admitted vs exact, run | worst window over | worst window under |',
  )
  print('|---|---|---|---|---|---|---|---|')
  for (const scheme of SCHEMES) {
    if (scheme.name.includes('exact')) continue
    for (const nodes of [2, 4, 8]) {
      for (const traffic of ['90/10', 'Zipf'] as Traffic[]) {
        const parts = partsOf(traffic, nodes)
        const reference = simulate(scheme.kind === 'bucket' ? exactBucket() : exactWindow(), parts, load, false)
        const run = simulate(
          scheme.make(nodes, () => nodes),
          parts,
          load,
          false,
        )
        const { total, worstOver, worstUnder } = against(run, reference)
        const waits = `${((100 * run.waits) / run.decisions).toFixed(2)} %`
        print(
          `| ${scheme.name} | ${nodes} | ${traffic} | ${(run.calls / run.decisions).toFixed(4)} | ${waits} | ${pct(total)} | ${pct(worstOver)} | ${pct(worstUnder)} |`,
        )
      }
    }
  }
  print('')
}

print(
  `A node killed at ${KILL_AT} ms (the busiest of 90/10; its traffic moves to the others), against the exact reference on the same arrivals:`,
)
print('')
print(
  '| scheme | nodes | 1×: held by the killed node | 1×: admitted vs exact | 2×: admitted vs exact, run | 2×: worst window over | live nodes hold at most, after the kill (1×) |',
)
print('|---|---|---|---|---|---|---|')
for (const scheme of SCHEMES) {
  if (scheme.name.includes('exact')) continue
  for (const nodes of [2, 4, 8]) {
    const parts = partsOf('90/10', nodes)
    // The others count the dead node until its heartbeats are NODE_TTL_MS old.
    const live = (now: number) => (now < KILL_AT + NODE_TTL_MS ? nodes : nodes - 1)
    const cells: string[] = []
    let most = 0
    for (const load of [1, 2]) {
      const reference = simulate(scheme.kind === 'bucket' ? exactBucket() : exactWindow(), parts, load, true)
      const made = scheme.make(nodes, live)
      const sync = made.sync.bind(made)
      made.sync = (i, now) => {
        sync(i, now)
        if (load === 1 && now > KILL_AT) most = Math.max(most, made.held())
      }
      const run = simulate(made, parts, load, true)
      const { total, worstOver } = against(run, reference)
      if (load === 1) cells.push(String(run.stranded), pct(total))
      else cells.push(pct(total), pct(worstOver))
    }
    print(`| ${scheme.name} | ${nodes} | ${cells.join(' | ')} | ${most} |`)
  }
}

/** The same traffic on real processes: script calls per decision and admitted ÷ offered. */
async function realRows(): Promise<void> {
  const server = await startRedisServer()
  const admin = new Redis(server.url)
  admin.on('error', () => {})
  try {
    print('')
    print('Real processes (one SyncedStore each, real clock, private redis-server), 3 s a row:')
    print('')
    print('| algorithm | nodes | traffic | offered × limit | script calls / decision | admitted ÷ offered |')
    print('| --- | --- | --- | --- | --- | --- |')
    for (const algorithm of ['fixed-window', 'token-bucket'] as const) {
      for (const nodes of [2, 4, 8]) {
        for (const traffic of ['90/10', 'Zipf'] as Traffic[]) {
          for (const load of [1, 2]) {
            const prefix = uniquePrefix('leasing-bench')
            const plans = partsOf(traffic, nodes).map((part, i) => ({
              url: server.url,
              prefix,
              nodeId: `p${i}`,
              interval: INTERVAL,
              algorithm,
              limit: LIMIT,
              window: WINDOW,
              rates: { hot: part * load * LIMIT },
              duration: 3000,
              seed: 1 + i,
            }))
            const before = parseCommandStats(await admin.info('commandstats'))
            const workers = await Promise.all(plans.map((plan) => startWorker(plan)))
            for (const { child } of workers) child.stdin?.write('go\n')
            const results = await Promise.all(workers.map((w) => w.done))
            // A worker waits on its stdin after its result: each is ended here, by its handle.
            for (const { child } of workers) child.kill()
            const ran = commandsBetween(before, parseCommandStats(await admin.info('commandstats')))
            const offered = sum(results.map((r) => r.offered.hot ?? 0))
            const admitted = sum(results.map((r) => r.admitted.hot ?? 0))
            const calls = (ran.evalsha ?? 0) + (ran.eval ?? 0)
            print(
              `| ${algorithm} | ${nodes} | ${traffic} | ${load} | ${(calls / offered).toFixed(4)} | ${(admitted / offered).toFixed(3)} |`,
            )
          }
        }
      }
    }
  } finally {
    admin.disconnect()
    await server.stop()
  }
}

if (args.includes('--real')) await realRows()
