// Leased buckets through Redis faults (issue 39 §2): SyncedStore processes (worker.ts) offer one hot
// key 3× its rate on a private redis-server while one fault is applied; every admission is
// counted in the run's windows. Used by bucket-faults.test.ts (a fast subset) and by
// test/faults/synced-buckets.ts (the whole table, in `pnpm test:faults`).
import { type ChildProcess, spawn } from 'node:child_process'
import { Redis } from 'ioredis'
import { type RedisServer, startRedisServer, uniquePrefix } from '../support/redis.js'
import { sleep } from '../support/wait.js'
import { startWorker, type WorkerResult } from './fleet.js'

export const BUCKET_FAULTS = ['kill -9', 'SIGSTOP', 'restart empty', 'FLUSHALL'] as const
export type BucketFault = (typeof BUCKET_FAULTS)[number]

export interface BucketFaultRun {
  algorithm: 'token-bucket' | 'gcra'
  processes: number
  fault: BucketFault
  /** Units per window; the burst is the limit. */
  limit: number
  windowMs: number
  /** When the fault begins, ms after the processes start offering. */
  faultAtMs: number
  durationMs: number
  /** How long Redis is dead (kill -9, before a new empty server starts) or frozen (SIGSTOP). */
  faultMs: number
  /** CPU burners (`node -e 'for(;;){}'`) beside the processes, stopped by their PID. */
  burners?: number
}

export interface BucketFaultResult {
  /** Per window of the run (from the start of offering): admitted, and what one bucket admits to 3× its rate. */
  windows: { admitted: number; ideal: number }[]
  admitted: number
  offered: number
  /** Burst + rate × the run: the most one bucket admits in it. */
  bound: number
  unhandled: string[]
}

/** Runs the processes through one fault; the admissions per window. */
export async function runBucketFault(run: BucketFaultRun): Promise<BucketFaultResult> {
  let server: RedisServer = await startRedisServer()
  const burners: ChildProcess[] = []
  const workers: Awaited<ReturnType<typeof startWorker>>[] = []
  try {
    const prefix = uniquePrefix(`bucket-faults-${run.algorithm}`)
    const ratePerSecond = (run.limit * 1000) / run.windowMs
    // Started together (each waits for "go"); each kept as it is ready, so `finally` stops it.
    const starting = Array.from({ length: run.processes }, async (_, i) => {
      workers.push(
        await startWorker({
          url: server.url,
          prefix,
          nodeId: `p${i}`,
          interval: 100,
          algorithm: run.algorithm,
          limit: run.limit,
          window: run.windowMs,
          rates: { hot: (3 * ratePerSecond) / run.processes },
          duration: run.durationMs,
          seed: 1 + i,
          record: true,
          recommended: true,
        }),
      )
    })
    await Promise.all(starting)
    for (let i = 0; i < (run.burners ?? 0); i++) {
      burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }))
    }
    const started = Date.now()
    for (const { child } of workers) child.stdin?.write('go\n')
    await sleep(run.faultAtMs)
    server = await apply(run.fault, server, run.faultMs)
    const results: WorkerResult[] = await Promise.all(workers.map((w) => w.done))
    const times = results.flatMap((r) => r.admittedAt ?? [])
    const count = Math.ceil(run.durationMs / run.windowMs)
    const windows = Array.from({ length: count }, (_, k) => {
      const from = started + k * run.windowMs
      const span = Math.min(run.windowMs, run.durationMs - k * run.windowMs)
      return {
        admitted: times.filter((t) => t >= from && t < from + run.windowMs).length,
        ideal: Math.round((k === 0 ? run.limit : 0) + (ratePerSecond * span) / 1000),
      }
    })
    return {
      windows,
      admitted: times.length,
      offered: results.reduce((sum, r) => sum + (r.offered.hot ?? 0), 0),
      bound: Math.round(run.limit + (ratePerSecond * run.durationMs) / 1000),
      unhandled: results.flatMap((r) => r.unhandled),
    }
  } finally {
    for (const burner of burners) if (burner.pid !== undefined) process.kill(burner.pid, 'SIGKILL')
    for (const { child } of workers) if (child.exitCode === null && child.pid !== undefined) child.kill('SIGKILL')
    await server.stop()
  }
}

/** Applies the fault; the server that runs afterwards (a new, empty one after kill -9 or a restart). */
async function apply(fault: BucketFault, server: RedisServer, faultMs: number): Promise<RedisServer> {
  const pid = server.pid as number
  switch (fault) {
    case 'kill -9':
      process.kill(pid, 'SIGKILL')
      await server.stop() // only cleans up: the process is gone
      await sleep(faultMs)
      return startRedisServer({ port: server.port })
    case 'SIGSTOP':
      process.kill(pid, 'SIGSTOP')
      await sleep(faultMs)
      process.kill(pid, 'SIGCONT')
      return server
    case 'restart empty':
      await server.stop()
      return startRedisServer({ port: server.port })
    case 'FLUSHALL': {
      const admin = new Redis(server.url)
      await admin.flushall()
      admin.disconnect()
      return server
    }
  }
}
