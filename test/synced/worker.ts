/**
 * One node for the multi-process tests and the distributed benchmark: a SyncedStore on the real
 * clock, offering requests at a fixed rate to the key patterns asked for, until told to stop.
 * Args: one JSON object (see WorkerPlan). Prints "ready", waits for "go" on stdin, prints
 * `{"admitted":…,"offered":…}` (per pattern) when done, after flush() and close().
 * With plan.progress, prints `{"progress":<admitted so far>}` every 10 ms (the kill test). Patterns
 * in plan.held wait for a second line, `release`.
 */
import { createInterface } from 'node:readline'
import { parsePolicies } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { KEYS, keysOf, type Pattern, type WorkerPlan } from './plan.js'

const plan = JSON.parse(process.argv[2] ?? '{}') as WorkerPlan
const unhandled: unknown[] = []
/** Failed syncs, when (ms after go) and why: a test that finds counts missing prints them. */
const syncErrors: string[] = []
let started = Date.now()
/** Once offering: when the last sync ended, and the longest time between two (a starved process syncs late). */
let lastSync: number | undefined
let maxSyncGap = 0
process.on('unhandledRejection', (reason) => unhandled.push(String(reason)))
const client = new Redis(
  plan.url,
  plan.recommended ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 50 } : {},
)
client.on('error', () => {})
// Without an offline queue a command fails until the connection is up.
if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
await client.ping()
const store = new SyncedStore({
  client,
  prefix: plan.prefix,
  interval: plan.interval,
  nodeId: plan.nodeId,
  observe: (event) => {
    if (event.type !== 'sync') return
    if (event.error !== undefined) syncErrors.push(`${Date.now() - started} ms: ${String(event.error)}`)
    else if (lastSync !== undefined) {
      const at = performance.now()
      maxSyncGap = Math.max(maxSyncGap, at - lastSync)
      lastSync = at
    }
  },
  ...(plan.exactAbove === undefined ? {} : { exactAbove: plan.exactAbove }),
  ...(plan.maxKeys === undefined ? {} : { maxKeys: plan.maxKeys }),
  ...(plan.lease === undefined ? {} : { lease: plan.lease }),
})
const set = parsePolicies({ limit: plan.limit, window: plan.window, algorithm: plan.algorithm })
const patterns = (Object.keys(plan.rates) as Pattern[]).map((pattern) => ({
  pattern,
  next: keysOf(pattern, plan.seed),
}))
const admitted: Record<string, number> = {}
const offered: Record<string, number> = {}
/** Decisions that failed (a StoreFullError), per pattern, and the last one's message. */
const errors: Record<string, number> = {}
let lastError: string | undefined
let slowest = 0
const admittedAt: number[] = []

process.stdout.write('ready\n')
const input = createInterface({ input: process.stdin })
const lines = input[Symbol.asyncIterator]()
await lines.next() // go
/** When `release` was read (ms after go): held patterns are offered from then. */
let releasedAt: number | undefined
void lines.next().then(() => {
  releasedAt = Date.now() - started
})

if (plan.delay !== undefined) await new Promise((r) => setTimeout(r, plan.delay))
started = Date.now()
lastSync = performance.now()
const keyCount = plan.keys ?? KEYS
/** Requests offered so far, per pattern. */
const debts = patterns.map(() => 0)
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    // Catch up to the rate by the clock, so a late tick does not lower the offered load; the last
    // tick offers what was due by the end of the duration (a starved process still offers it all).
    const elapsed = Math.min(Date.now() - started, plan.duration)
    for (const [i, { pattern, next }] of patterns.entries()) {
      const from = plan.held?.includes(pattern) ? releasedAt : 0
      if (from === undefined) continue
      const due = ((plan.rates[pattern] ?? 0) * Math.max(0, elapsed - from)) / 1000
      for (; (debts[i] as number) < due; debts[i] = (debts[i] as number) + 1) {
        offered[pattern] = (offered[pattern] ?? 0) + 1
        const asked = performance.now()
        const askedAt = Date.now()
        const id = pattern === 'flood' ? `${plan.nodeId}:${next()}` : String(next() % keyCount)
        const count = (outcomes: readonly { allowed: boolean }[]) => {
          slowest = Math.max(slowest, performance.now() - asked)
          if (!outcomes.every((o) => o.allowed)) return
          admitted[pattern] = (admitted[pattern] ?? 0) + 1
          if (plan.record && pattern === 'hot') admittedAt.push(askedAt)
        }
        let answer: ReturnType<typeof store.consume>
        try {
          answer = store.consume(`${pattern}:${id}`, set, 1)
        } catch (error) {
          errors[pattern] = (errors[pattern] ?? 0) + 1
          lastError = String(error)
          continue
        }
        if (Array.isArray(answer)) count(answer)
        else
          void (answer as Promise<readonly { allowed: boolean }[]>).then(count, (error: unknown) => {
            errors[pattern] = (errors[pattern] ?? 0) + 1
            lastError = String(error)
          })
      }
    }
    if (plan.progress) process.stdout.write(`${JSON.stringify({ progress: admitted })}\n`)
    if (elapsed >= plan.duration) {
      clearInterval(timer)
      resolve()
    }
  }, 5)
})
lastSync = undefined // close() syncs on its own schedule
await new Promise((r) => setTimeout(r, 300)) // exact decisions still in flight
// flush waits for its sync however loaded the machine; close gives up after 2 s and says what it could not send.
await store.flush()
const closed = await store.close()
process.stdout.write(
  `${JSON.stringify({ admitted, offered, slowest, unhandled, syncErrors, errors, lastError, closed, maxSyncGap, ...(plan.record ? { admittedAt } : {}) })}\n`,
)
client.disconnect()
input.close()
