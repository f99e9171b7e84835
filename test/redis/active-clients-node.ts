/**
 * One app server for the admission-sync test: an admission handler (maxActive from the args) on
 * ActiveClients synced through Redis. Reads one JSON command per stdin line, answers one JSON
 * line each, in order. Args: redis url, sync name, interval (ms), maxActive.
 */
import { createInterface } from 'node:readline'
import { type Adapter, createAdmissionHandler } from '@sluice/core/adapter'
import { RedisActiveClientsSync } from '@sluice/redis'
import { Redis } from 'ioredis'

const [url = '', name = '', interval = '1000', maxActive = '100'] = process.argv.slice(2)
const unhandled: string[] = []
process.on('unhandledRejection', (reason) => unhandled.push(String(reason)))

const client = new Redis(url, { lazyConnect: false })
client.on('error', () => {}) // reconnects by itself; the sync reports its own failures
/**
 * Each sync answered, as [started, ended] epoch ms, so the test reasons in syncs (whose timers a
 * loaded machine runs late), not in milliseconds.
 */
const syncs: [number, number][] = []
/** Per watched key, when the first sync after which this node had it ended (undefined: not yet). */
const learned = new Map<string, number | undefined>()
const sync = new RedisActiveClientsSync({
  client,
  name,
  interval: Number(interval),
  observe: (event) => {
    if (event.type !== 'sync' || event.error !== undefined) return
    const ended = Date.now()
    syncs.push([ended - event.durationMs, ended])
    for (const [key, at] of learned) if (at === undefined && clients.has(key)) learned.set(key, ended)
  },
})
const adapter: Adapter<[string]> = { name: 'node', addressSource: 'key', address: (key) => key, status: () => 200 }
const handler = createAdmissionHandler<[string], unknown>(
  { maxActive: Number(maxActive), capacity: 100_000, key: (key) => key, sync },
  adapter,
)
const { clients } = handler
/**
 * Ticks of a timer of the sync's interval, started just after the sync's (so late when it is late,
 * on a loaded machine): what one call per interval is counted against.
 */
let ticks = 0
setInterval(() => ticks++, Number(interval)).unref()

/** Whether `plan` answered without waiting for anything: a value, or a promise settled by the next macrotask. */
async function answeredAtOnce(plan: unknown): Promise<boolean> {
  if (!(plan instanceof Promise)) return true
  let settled = false
  plan.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  await new Promise((resolve) => setImmediate(resolve))
  return settled
}

/**
 * Takes `ms` to make `count` requests from distinct new clients, in small batches; the slowest
 * plan's time, and how many plans did not answer at once.
 */
async function load(count: number, ms: number, tag: string): Promise<{ slowest: number; waited: number }> {
  const started = performance.now()
  const batches = Math.max(1, Math.round(ms / 10))
  let slowest = 0
  let waited = 0
  for (let b = 0; b < batches; b++) {
    const from = Math.floor((b * count) / batches)
    const to = Math.floor(((b + 1) * count) / batches)
    for (let i = from; i < to; i++) {
      const t = performance.now()
      const plan = handler.plan(`${tag}-${i}`)
      slowest = Math.max(slowest, performance.now() - t)
      if (plan instanceof Promise && !(await answeredAtOnce(plan))) waited++
    }
    const due = started + ((b + 1) * ms) / batches
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())))
  }
  return { slowest, waited }
}

type Command =
  | { op: 'admit'; key: string }
  | { op: 'watch'; key: string }
  | { op: 'add'; prefix: string; count: number }
  | { op: 'state'; key?: string }
  | { op: 'load'; count: number; ms: number; tag: string }
  | { op: 'close' }

process.stdout.write('ready\n')
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Command
  let answer: unknown
  if (command.op === 'admit') {
    const started = performance.now()
    const planned = handler.plan(command.key)
    // A client a plan admits is recorded by the time it returns: a sync started later sends it.
    const at = Date.now()
    const atOnce = await answeredAtOnce(planned)
    const plan = await planned
    const ms = performance.now() - started
    answer = plan.kind === 'skip' ? {} : { kind: plan.kind, state: plan.state, ms, atOnce, at }
  } else if (command.op === 'watch') {
    learned.set(command.key, clients.has(command.key) ? Date.now() : undefined)
    answer = { has: clients.has(command.key) }
  } else if (command.op === 'add') {
    for (let i = 0; i < command.count; i++) clients.add(`${command.prefix}-${i}`)
    answer = { size: clients.size() }
  } else if (command.op === 'state') {
    answer = {
      size: clients.size(),
      has: command.key === undefined ? undefined : clients.has(command.key),
      throttling: handler.throttling,
      stats: sync.stats,
      syncs,
      ticks,
      learned: Object.fromEntries(learned),
      unhandled,
    }
  } else if (command.op === 'load') {
    answer = await load(command.count, command.ms, command.tag)
  } else {
    await sync.close()
    client.disconnect()
    answer = { closed: true, unhandled }
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`)
  if (command.op === 'close') break
}
