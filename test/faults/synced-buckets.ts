// SyncedStore's leased token bucket and GCRA through Redis faults (issue 39 §2): every fault on 2
// and 4 processes, and one loaded run beside CPU burners. Prints test/faults/README.md's rows.
//   pnpm tsx --conditions=source test/faults/synced-buckets.ts [--algorithm token-bucket|gcra] [--processes N] [--fault NAME] [--burners N]
import {
  BUCKET_FAULTS,
  type BucketFault,
  type BucketFaultResult,
  type BucketFaultRun,
  runBucketFault,
} from '../synced/bucket-faults.js'

/** Token bucket 200 per 10 s, fault at 15 s of a 30 s run; kill -9 keeps Redis dead 3 s, SIGSTOP freezes it 3 s. */
const BASE = { limit: 200, windowMs: 10_000, faultAtMs: 15_000, durationMs: 30_000, faultMs: 3000 } as const

export interface BucketRow {
  run: BucketFaultRun
  result: BucketFaultResult
}

/** The rows asked for (or all: both algorithms, 2 and 4 processes, every fault, and one loaded run). */
export async function bucketRows(only: Partial<BucketFaultRun> = {}): Promise<BucketRow[]> {
  const runs: BucketFaultRun[] = []
  for (const algorithm of ['token-bucket', 'gcra'] as const) {
    for (const processes of [2, 4]) {
      for (const fault of BUCKET_FAULTS) runs.push({ ...BASE, algorithm, processes, fault })
    }
  }
  runs.push({ ...BASE, algorithm: 'token-bucket', processes: 4, fault: 'kill -9', burners: 3 })
  const chosen = runs.filter((run) =>
    (Object.keys(only) as (keyof BucketFaultRun)[]).every((field) => only[field] === run[field]),
  )
  const rows: BucketRow[] = []
  for (const run of chosen) {
    const result = await runBucketFault(run)
    rows.push({ run, result })
    console.log(rowOf({ run, result }))
  }
  return rows
}

/** Within 5 % of one bucket in every window and over the run, no unhandled rejection. */
export const held = ({ result }: BucketRow): boolean =>
  result.unhandled.length === 0 &&
  result.admitted <= result.bound * 1.05 &&
  result.windows.every((w) => w.admitted <= w.ideal * 1.05)

export const HEADER = [
  '| algorithm | processes | fault | 0–10 s | 10–20 s (fault) | 20–30 s | whole run (bound) |',
  '|---|---:|---|---:|---:|---:|---:|',
].join('\n')

export function rowOf({ run, result }: BucketRow): string {
  const windows = result.windows.map((w) => `${w.admitted}/${w.ideal}`).join(' | ')
  const loaded = run.burners === undefined ? '' : `, ${run.burners} CPU burners`
  return `| ${run.algorithm} | ${run.processes}${loaded} | ${run.fault} | ${windows} | ${result.admitted}/${result.bound} |`
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const at = process.argv.indexOf(`--${name}`)
    return at < 0 ? undefined : process.argv[at + 1]
  }
  const only: Partial<BucketFaultRun> = {}
  const algorithm = arg('algorithm')
  if (algorithm === 'token-bucket' || algorithm === 'gcra') only.algorithm = algorithm
  if (arg('processes') !== undefined) only.processes = Number(arg('processes'))
  if (arg('fault') !== undefined) only.fault = arg('fault') as BucketFault
  if (arg('burners') !== undefined) only.burners = Number(arg('burners'))
  console.log(HEADER)
  const rows = await bucketRows(only)
  process.exit(rows.every(held) ? 0 : 1)
}
