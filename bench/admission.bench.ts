/**
 * Admission control (issue 11), four measurements:
 *  1. ns per has + add over 1M distinct access tokens: ActiveClients (capacity 1M, 30 slots)
 *     against a Set<string> of the same tokens;
 *  2. memory of each (heap delta after a forced GC for the Set; the filters' bytes, also measured);
 *  3. bytes sent to Redis per process per second at 1k and 100k new clients per second
 *     (RedisActiveClientsSync's own counters, one sync per simulated second, private redis-server);
 *  4. the seed's optimistic-lock sync (HMGET ts+value, OR locally, write back only if ts is
 *     unchanged, give up on conflict) against ours, 8 nodes each syncing once per interval on
 *     its own connection: how many syncs each drops.
 *
 *   pnpm bench:admission [--rounds 5] [--interval 200]
 */
import { ActiveClients } from '@sluice/core'
import { RedisActiveClientsSync } from '@sluice/redis'
import { Redis } from 'ioredis'
import { startRedisServer } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(args[index + 1])
}
const ROUNDS = option('rounds', 5)
const INTERVAL = option('interval', 200)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc (pnpm bench:admission does)')

const N = 1_000_000
/** Access-token-like keys: 32 hex characters, all distinct, flat strings. */
const token = (i: number, salt = 0) => {
  let out = ''
  let x = (i ^ salt) >>> 0
  for (let j = 0; j < 4; j++) {
    x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9 + j
    x >>>= 0
    out += x.toString(16).padStart(8, '0')
  }
  // Through a Buffer: a flat one-byte string, as a parsed header gives (not a rope of slices).
  return Buffer.from(`${out.slice(0, 24)}${i.toString(16).padStart(8, '0')}`).toString('latin1')
}
const heap = () => {
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers
}
const beforeTokens = heap()
const tokens = Array.from({ length: N }, (_, i) => token(i))
/** What the keys themselves take: a Set keeps them alive, the filters do not. */
const tokenBytes = heap() - beforeTokens

function timeActive(): { ns: number; bytes: number; measured: number } {
  const before = heap()
  const clients = new ActiveClients({ capacity: N })
  const start = process.hrtime.bigint()
  let known = 0
  for (let i = 0; i < N; i++) {
    const key = tokens[i] as string
    if (clients.has(key)) known++
    clients.add(key)
  }
  const ns = Number(process.hrtime.bigint() - start) / N
  const measured = heap() - before
  if (known > N * 0.002) throw new Error(`unexpected false positives: ${known}`)
  return { ns, bytes: clients.bytes, measured }
}

function timeSet(): { ns: number; measured: number } {
  const before = heap()
  const set = new Set<string>()
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) {
    const key = tokens[i] as string
    if (!set.has(key)) set.add(key)
  }
  const ns = Number(process.hrtime.bigint() - start) / N
  const measured = heap() - before
  if (set.size !== N) throw new Error('set lost keys')
  return { ns, measured }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`

console.log(`# admission bench: ${N} distinct tokens, ${ROUNDS} rounds (medians)`)
const active: { ns: number; bytes: number; measured: number }[] = []
const sets: { ns: number; measured: number }[] = []
for (let r = 0; r < ROUNDS; r++) {
  active.push(timeActive())
  sets.push(timeSet())
}
const activeNs = median(active.map((a) => a.ns))
const setNs = median(sets.map((s) => s.ns))
const setBytes = median(sets.map((s) => s.measured))
console.log(
  `has+add  ActiveClients ${activeNs.toFixed(0)} ns   Set ${setNs.toFixed(0)} ns   ratio ${(activeNs / setNs).toFixed(2)}`,
)
console.log(
  `memory   ActiveClients ${mb(active[0]!.bytes)} (heap delta ${mb(median(active.map((a) => a.measured)))})   ` +
    `Set ${mb(setBytes)} + its keys ${mb(tokenBytes)} = ${mb(setBytes + tokenBytes)}   ` +
    `ratio ${(active[0]!.bytes / (setBytes + tokenBytes)).toFixed(2)}`,
)

/** The sync script's decoding loop, now: LEB128 gaps into BITFIELD SETs (as in active-clients/lua.ts). */
const DECODE_GAPS_LUA = `local payload = ARGV[1]
local args, n = {}, 0
local position, gap, scale = -1, 0, 1
for at = 1, #payload do
  local b = string.byte(payload, at)
  if b >= 128 then
    gap = gap + (b - 128) * scale
    scale = scale * 128
  else
    position = position + 1 + gap + b * scale
    gap, scale = 0, 1
    args[n + 1] = 'SET' args[n + 2] = 'u1' args[n + 3] = position args[n + 4] = 1
    n = n + 4
  end
  if n >= 4000 then redis.call('BITFIELD', KEYS[1], unpack(args, 1, n)) n = 0 end
end
if n > 0 then redis.call('BITFIELD', KEYS[1], unpack(args, 1, n)) end`

/** The loop it replaced: little-endian u32 positions. */
const DECODE_U32_LUA = `local payload = ARGV[1]
local args, n = {}, 0
for at = 1, #payload, 4 do
  local b1, b2, b3, b4 = string.byte(payload, at, at + 3)
  args[n + 1] = 'SET' args[n + 2] = 'u1' args[n + 3] = b1 + b2 * 256 + b3 * 65536 + b4 * 16777216 args[n + 4] = 1
  n = n + 4
  if n >= 4000 then redis.call('BITFIELD', KEYS[1], unpack(args, 1, n)) n = 0 end
end
if n > 0 then redis.call('BITFIELD', KEYS[1], unpack(args, 1, n)) end`

const server = await startRedisServer()
try {
  // 3. Bytes per process per second, with a clock moved one second per sync; the script's time per
  //    sync from Redis's own count (commandstats), and what the u32 positions it replaced would weigh.
  for (const perSecond of [16, 1_000, 100_000]) {
    const redis = new Redis(server.url)
    const clock = { now: 1_800_000_000_000 }
    const clients = new ActiveClients({ capacity: N, now: () => clock.now })
    const sync = new RedisActiveClientsSync({ client: redis, name: `bytes-${perSecond}`, interval: 3_600_000 })
    sync.attach(clients)
    await sync.syncNow()
    const seconds = 10
    const sent0 = sync.stats.bytesSent
    const positions0 = sync.stats.positionsSent
    await redis.config('RESETSTAT')
    let next = 0
    for (let s = 0; s < seconds; s++) {
      for (let i = 0; i < perSecond; i++) clients.add(token(next++, 0x5eed))
      clock.now += 1000
      await sync.syncNow()
    }
    const scriptUs = scriptMicroseconds(await redis.info('commandstats'))
    const perSec = (sync.stats.bytesSent - sent0) / seconds
    const positions = sync.stats.positionsSent - positions0
    console.log(
      `sync     ${perSecond} new clients/s: ${(perSec / 1024).toFixed(2)} KiB sent per process per second ` +
        `(${(perSec / perSecond).toFixed(1)} B per new client` +
        (positions > 0
          ? `, ${(positions / (seconds * perSecond)).toFixed(1)} positions, ${((4 * positions) / (seconds * perSecond)).toFixed(1)} B as u32s; `
          : '; ') +
        `a whole slot is ${mb(clients.bits / 8)}); ` +
        `script ${scriptUs.toFixed(0)} µs per sync`,
    )
    await sync.close()
    redis.disconnect()
  }

  // 3b. Redis's work to set the same positions, decoded from LEB128 gaps (now) and from u32s (before),
  //     evenly spread over a filter of capacity N as a sync's are.
  {
    const redis = new Redis(server.url)
    const bits = new ActiveClients({ capacity: N }).bits
    for (const count of [100, 10_000, 56_000]) {
      const positions = new Uint32Array(count)
      for (let i = 0; i < count; i++) positions[i] = Math.floor(((i + 0.5) * bits) / count)
      const gaps = gapsOf(positions)
      const u32 = Buffer.alloc(count * 4)
      for (let i = 0; i < count; i++) u32.writeUInt32LE(positions[i] as number, i * 4)
      const once = async (script: string, payload: Buffer) => {
        await redis.del('decode')
        await redis.config('RESETSTAT')
        await redis.eval(script, 1, 'decode', payload)
        if ((await redis.bitcount('decode')) !== count) throw new Error('decoding lost positions')
        return scriptMicroseconds(await redis.info('commandstats'))
      }
      // Interleaved, median of 15: the load on this machine drifts.
      const gapRuns: number[] = []
      const u32Runs: number[] = []
      for (let r = 0; r < 15; r++) {
        gapRuns.push(await once(DECODE_GAPS_LUA, gaps))
        u32Runs.push(await once(DECODE_U32_LUA, u32))
      }
      const gapUs = median(gapRuns)
      const u32Us = median(u32Runs)
      console.log(
        `decode   ${count} positions: gaps ${gaps.length} B ${gapUs.toFixed(0)} µs   u32 ${u32.length} B ${u32Us.toFixed(0)} µs   ` +
          `bytes ×${(gaps.length / u32.length).toFixed(2)}, Redis time ×${(gapUs / u32Us).toFixed(2)}`,
      )
    }
    redis.disconnect()
  }

  // 4. Eight nodes, optimistic lock (the seed's v1.1) against OR merges, same traffic.
  const NODES = 8
  const CAPACITY = 100_000
  const SECONDS = 5
  const OCC_WRITE = `if (redis.call('HGET', KEYS[1], 'ts') or '') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'ts', ARGV[2], 'value', ARGV[3]) return 1 end return 0`
  const occ = async () => {
    const key = `occ:${Date.now()}`
    const nodes = Array.from({ length: NODES }, (_, n) => ({
      redis: new Redis(server.url),
      clients: new ActiveClients({ capacity: CAPACITY }),
      n,
      ok: 0,
      dropped: 0,
    }))
    let stamp = 0
    const syncOnce = async (node: (typeof nodes)[number]) => {
      const slot = node.clients.currentSlot()
      const [ts, value] = (await node.redis.hmgetBuffer(key, 'ts', 'value')) as [Buffer | null, Buffer | null]
      if (value) node.clients.mergeSlot(slot, value.subarray(0, node.clients.bits / 8))
      const mine = node.clients.exportSlot(slot) as Uint8Array
      const won = await node.redis.eval(OCC_WRITE, 1, key, ts?.toString() ?? '', String(++stamp), Buffer.from(mine))
      if (won === 1) node.ok++
      else node.dropped++
    }
    return run(nodes, syncOnce)
  }
  const ours = async () => {
    const nodes = Array.from({ length: NODES }, (_, n) => {
      const redis = new Redis(server.url)
      const clients = new ActiveClients({ capacity: CAPACITY })
      const sync = new RedisActiveClientsSync({ client: redis, name: `ours-${Date.now()}`, interval: 3_600_000 })
      sync.attach(clients)
      return { redis, clients, n, sync, ok: 0, dropped: 0 }
    })
    return run(nodes, async (node) => {
      const errors = node.sync.stats.errors
      await node.sync.syncNow()
      if (node.sync.stats.errors > errors) node.dropped++
      else node.ok++
    })
  }
  /** Every node adds its share of 20k new clients per second and syncs once per INTERVAL, all at once. */
  async function run<T extends { redis: Redis; clients: ActiveClients; n: number; ok: number; dropped: number }>(
    nodes: T[],
    syncOnce: (node: T) => Promise<void>,
  ) {
    const perTick = Math.round((20_000 * INTERVAL) / 1000 / NODES)
    let next = 0
    const ticks = Math.round((SECONDS * 1000) / INTERVAL)
    const started = performance.now()
    for (let t = 0; t < ticks; t++) {
      for (const node of nodes) for (let i = 0; i < perTick; i++) node.clients.add(token(next++, node.n + 1))
      await Promise.all(nodes.map(syncOnce))
      const due = started + (t + 1) * INTERVAL
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())))
    }
    for (const node of nodes) node.redis.disconnect()
    const dropped = nodes.map((node) => node.dropped)
    const total = nodes.reduce((sum, node) => sum + node.ok + node.dropped, 0)
    return { dropped, share: dropped.reduce((a, b) => a + b, 0) / total }
  }
  const lock = await occ()
  const or = await ours()
  console.log(
    `8 nodes  optimistic lock: syncs dropped per node [${lock.dropped.join(', ')}] = ${(lock.share * 100).toFixed(0)} % ` +
      `of ${Math.round((SECONDS * 1000) / INTERVAL)} each;  OR merge: [${or.dropped.join(', ')}] = ${(or.share * 100).toFixed(0)} %`,
  )
} finally {
  await server.stop()
}

/** Microseconds of script time Redis counted since RESETSTAT (EVAL and EVALSHA). */
function scriptMicroseconds(info: string): number {
  let usec = 0
  let calls = 0
  for (const match of info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+),usec=(\d+)/g)) {
    calls += Number(match[1])
    usec += Number(match[2])
  }
  return calls === 0 ? 0 : usec / calls
}

/** The sync's encoding of positions (RedisActiveClientsSync's gapsPayload), for the decoding row. */
function gapsOf(positions: Uint32Array): Buffer {
  const out: number[] = []
  let previous = -1
  for (const position of positions) {
    let gap = position - previous - 1
    previous = position
    while (gap >= 128) {
      out.push((gap % 128) | 128)
      gap = Math.floor(gap / 128)
    }
    out.push(gap)
  }
  return Buffer.from(out)
}
