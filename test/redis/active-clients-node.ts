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
const sync = new RedisActiveClientsSync({ client, name, interval: Number(interval) })
const adapter: Adapter<[string]> = { name: 'node', addressSource: 'key', address: (key) => key, status: () => 200 }
const handler = createAdmissionHandler<[string], unknown>(
  { maxActive: Number(maxActive), capacity: 100_000, key: (key) => key, sync },
  adapter,
)
const { clients } = handler

/** Takes `ms` to make `count` requests from distinct new clients, in small batches. */
async function load(count: number, ms: number, tag: string): Promise<number> {
  const started = performance.now()
  const batches = Math.max(1, Math.round(ms / 10))
  let slowest = 0
  for (let b = 0; b < batches; b++) {
    const from = Math.floor((b * count) / batches)
    const to = Math.floor(((b + 1) * count) / batches)
    for (let i = from; i < to; i++) {
      const t = performance.now()
      handler.plan(`${tag}-${i}`)
      slowest = Math.max(slowest, performance.now() - t)
    }
    const due = started + ((b + 1) * ms) / batches
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())))
  }
  return slowest
}

type Command =
  | { op: 'admit'; key: string }
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
    const plan = await handler.plan(command.key)
    const ms = performance.now() - started
    answer = plan.kind === 'skip' ? {} : { kind: plan.kind, state: plan.state, ms }
  } else if (command.op === 'add') {
    for (let i = 0; i < command.count; i++) clients.add(`${command.prefix}-${i}`)
    answer = { size: clients.size() }
  } else if (command.op === 'state') {
    answer = {
      size: clients.size(),
      has: command.key === undefined ? undefined : clients.has(command.key),
      throttling: handler.throttling,
      stats: sync.stats,
      unhandled,
    }
  } else if (command.op === 'load') {
    answer = { slowest: await load(command.count, command.ms, command.tag) }
  } else {
    await sync.close()
    client.disconnect()
    answer = { closed: true, unhandled }
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`)
  if (command.op === 'close') break
}
