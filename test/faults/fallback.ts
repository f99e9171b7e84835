// RedisStore + FallbackShare + FleetSize (the README's recommended configuration), measured: four
// app processes offered 3× a limit of 200 per 10 s, each fault of FALLBACK_FAULTS 1 s and 9 s into
// a window; every hot-key admission of the window of the fault, whoever decided it.
//   pnpm tsx --conditions=source test/faults/fallback.ts [--algorithm fixed-window] [--offsets 1000,9000]
import type { AlgorithmName } from '@sluice/core'
import { FALLBACK_FAULTS, runFallbackFaults, type SuiteOptions } from './run.js'

const arg = (name: string) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}
const algorithm = (arg('--algorithm') ?? 'fixed-window') as AlgorithmName
const offsets = (arg('--offsets') ?? '1000,9000').split(',').map(Number)
const workers = 4
const limit = 200
const windowMs = 10_000
const options: SuiteOptions = {
  workers,
  faultMs: 3000,
  recoveryMs: 0,
  baselineMs: 1000,
  // 3× the limit in all: each process asks every windowMs × workers ÷ (3 × limit) ms.
  worker: { limit, windowMs, algorithm, timeoutMs: 200, cooldownMs: 1000, tickMs: (windowMs * workers) / (3 * limit) },
}

const faults = offsets.flatMap((offsetMs) => FALLBACK_FAULTS.map((fault) => ({ fault, offsetMs })))
const result = await runFallbackFaults(options, faults)
console.log(
  `${algorithm}, ${workers} processes (FleetSize counted ${result.processes.join(', ')}), limit ${limit} per ${windowMs} ms, offered 3×`,
)
console.log(
  '| fault | into the window | admitted in the window of the fault | of which by the fallbacks | admitted in the next window |',
)
console.log('|---|---:|---:|---:|---:|')
for (const w of result.windows) {
  console.log(`| ${w.fault} | ${w.offsetMs} ms | ${w.admitted} | ${w.byFallback} | ${w.admittedNext} |`)
}
console.log(`unhandled: ${result.unhandled}; exit codes: ${result.exitCodes.join(', ')}`)
process.exit(result.unhandled === 0 && result.exitCodes.every((code) => code === 0) ? 0 : 1)
