/**
 * One process for the cardinality tests and benchmark: a RedisStore or SyncedStore on the real
 * clock, driven by one JSON command per stdin line, answering each with one JSON line:
 * - `{"see":n}`: decides keys k0…k(n-1) once each, lets every answer and a sync land; `{"seen":n}`.
 * - `{"idle":ms}`: decides nothing for ms; `{"cpuMs":…}`, the CPU time this process used meanwhile.
 * - `{"traffic":{"keys":n,"perKeyPerSecond":r,"seconds":s}}`: offers r requests a second to each of n
 *   keys (k0…), evenly spread, for s seconds, then waits for every answer; `{"admitted":…,"offered":…,"cpuMs":…}`.
 * - `{"close":true}`: closes the store and exits.
 * Args: one JSON object: url, store ('redis' | 'synced'), prefix, limit and window (ms), interval,
 * algorithm (default sliding window).
 */
import { createInterface } from 'node:readline'
import { parsePolicies } from '@sluice/core'
import type { Outcome, Store } from '@sluice/core/store'
import { RedisStore, SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { sleep } from '../support/wait.js'

export interface CardinalityPlan {
  url: string
  store: 'redis' | 'synced'
  prefix: string
  limit: number
  window: number
  interval: number
  /** Default the sliding window. */
  algorithm?: 'sliding-window' | 'token-bucket'
}

const plan = JSON.parse(process.argv[2] ?? '{}') as CardinalityPlan
const client = new Redis(plan.url)
client.on('error', () => {})
await client.ping()
const store: Store & { flush?: () => Promise<void>; close?: () => Promise<unknown> } =
  plan.store === 'synced'
    ? new SyncedStore({ client, prefix: plan.prefix, interval: plan.interval })
    : new RedisStore({ client, prefix: plan.prefix })
const set = parsePolicies({ limit: plan.limit, window: plan.window, algorithm: plan.algorithm ?? 'sliding-window' })
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
}

/** Decides one request; counts it when admitted; resolves once answered. */
let admitted = 0
const inFlight = new Set<Promise<void>>()
function decide(key: string): void {
  const answer = store.consume(key, set, 1)
  const count = (outcomes: readonly Outcome[]) => {
    if (outcomes.every((o) => o.allowed)) admitted++
  }
  if (Array.isArray(answer)) count(answer)
  else {
    const pending: Promise<void> = (answer as Promise<readonly Outcome[]>).then(count).finally(() => {
      inFlight.delete(pending)
    })
    inFlight.add(pending)
  }
}

async function settle(): Promise<void> {
  while (inFlight.size > 0) await Promise.all(inFlight)
  await store.flush?.()
}

const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)
process.stdout.write('ready\n')
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as {
    see?: number
    idle?: number
    traffic?: { keys: number; perKeyPerSecond: number; seconds: number }
    close?: boolean
  }
  if (command.see !== undefined) {
    for (let i = 0; i < command.see; i++) {
      decide(`k${i}`)
      // Lets replies and timers in between, as a server taking requests would.
      if (i % 500 === 499) await new Promise((r) => setImmediate(r))
    }
    await settle()
    await sleep(3 * plan.interval)
    reply({ seen: command.see })
  } else if (command.idle !== undefined) {
    const since = process.cpuUsage()
    await sleep(command.idle)
    reply({ cpuMs: cpuMs(since) })
  } else if (command.traffic !== undefined) {
    const { keys, perKeyPerSecond, seconds } = command.traffic
    const since = process.cpuUsage()
    const started = Date.now()
    const total = keys * perKeyPerSecond * seconds
    let offered = 0
    admitted = 0
    while (offered < total) {
      // Catch up to the rate by the clock, so a late tick does not lower the offered load.
      const due = Math.min(total, Math.floor((keys * perKeyPerSecond * (Date.now() - started)) / 1000))
      for (; offered < due; offered++) decide(`k${offered % keys}`)
      await sleep(5)
    }
    await settle()
    reply({ admitted, offered, cpuMs: cpuMs(since) })
  } else if (command.close === true) {
    await store.close?.()
    client.disconnect()
    reply({ closed: true })
    break
  }
}
