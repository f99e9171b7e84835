// The key flood of issue 39 against SyncedStore, on real processes and a private redis-server:
// maxKeys 1 000, one hot key offered 3× its limit of 100 per 10 s window while 2 500 new keys a
// second arrive (spread over the processes). Reports, per run, the most the hot key was admitted
// in one window (Redis's count of its window: every node's fields) and the most fields one of its
// hashes held. Part of `pnpm test:faults` (long.ts); each run is 30 s.
import { Redis } from 'ioredis'
import { startRedisServer } from '../support/redis.js'
import { countOf, keepingHashes, runFleet, totalsInRedis } from '../synced/fleet.js'
import type { WorkerPlan } from '../synced/plan.js'

const LIMIT = 100
const WINDOW = 10_000
const DURATION = 30_000
const FLOOD_PER_S = 2500
const MAX_KEYS = 1000

export interface FloodRow {
  readonly processes: number
  readonly algorithm: 'fixed-window' | 'sliding-window'
  readonly offered: number
  readonly flood: number
  readonly mostInWindow: number
  readonly mostFields: number
  readonly failed: number
}

export async function runSyncedFlood(): Promise<FloodRow[]> {
  const server = await startRedisServer()
  const client = new Redis(server.url)
  const rows: FloodRow[] = []
  try {
    for (const [processes, algorithm] of [
      [1, 'fixed-window'],
      [2, 'fixed-window'],
      [2, 'sliding-window'],
    ] as const) {
      const prefix = `flood-${processes}-${algorithm}:`
      const plans: WorkerPlan[] = Array.from({ length: processes }, (_, i) => ({
        url: server.url,
        prefix,
        nodeId: `p${i}`,
        interval: 100,
        algorithm,
        limit: LIMIT,
        window: WINDOW,
        rates: { hot: (3 * LIMIT * 1000) / WINDOW / processes, flood: FLOOD_PER_S / processes },
        duration: DURATION,
        seed: 1 + i,
        maxKeys: MAX_KEYS,
      }))
      // The hot key's hashes must outlive the run for the read below (see keepingHashes).
      const results = await keepingHashes(client, prefix, () => runFleet(plans), 'hot:0')
      const hot = [...((await totalsInRedis(client, prefix)).get('hot:0') ?? new Map())]
      let mostInWindow = 0
      for (const [start] of hot) {
        let inWindow = 0
        for (const [other, totals] of hot) if (other >= start && other < start + WINDOW) inWindow += countOf(totals)
        mostInWindow = Math.max(mostInWindow, inWindow)
      }
      const sum = (pick: (r: (typeof results)[number]) => number) => results.reduce((s, r) => s + pick(r), 0)
      rows.push({
        processes,
        algorithm,
        offered: sum((r) => r.offered.hot ?? 0),
        flood: sum((r) => r.offered.flood ?? 0),
        mostInWindow,
        mostFields: Math.max(0, ...hot.map(([, totals]) => Object.keys(totals).length)),
        failed: sum((r) => Object.values(r.errors).reduce((s, n) => s + (n ?? 0), 0)),
      })
    }
  } finally {
    client.disconnect()
    await server.stop()
  }
  return rows
}

export function floodTable(rows: readonly FloodRow[]): string {
  const lines = [
    '| processes | window | hot key offered | new keys | most admitted in one window (limit 100) | of its limit | most fields in one of its hashes | decisions failed |',
    '|---:|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const r of rows) {
    const window = r.algorithm === 'fixed-window' ? '10 s fixed' : '10 s sliding'
    lines.push(
      `| ${r.processes} | ${window} | ${r.offered} | ${r.flood} | ${r.mostInWindow} | ${Math.round((100 * r.mostInWindow) / LIMIT)} % | ${r.mostFields} | ${r.failed} |`,
    )
  }
  return lines.join('\n')
}
