// RedisStore + FallbackShare + FleetSize (the README's recommended configuration), measured: four
// app processes offered 3× a limit of 200 per 10 s, each fault of FALLBACK_FAULTS at each offset
// into a window; every hot-key admission of the window of the fault, whoever decided it.
import type { AlgorithmName } from '@sluice/core'
import { FALLBACK_FAULTS, runFallbackFaults, type SuiteOptions } from './run.js'

const WORKERS = 4
const LIMIT = 200
const WINDOW_MS = 10_000

/** The table of test/faults/README.md for one algorithm, and whether every process ended cleanly. */
export async function fallbackTable(
  algorithm: AlgorithmName,
  offsets: readonly number[] = [1000, 9000],
): Promise<{ text: string; ok: boolean }> {
  const options: SuiteOptions = {
    workers: WORKERS,
    faultMs: 3000,
    recoveryMs: 0,
    baselineMs: 1000,
    // 3× the limit in all: each process asks every window × processes ÷ (3 × limit) ms.
    worker: {
      limit: LIMIT,
      windowMs: WINDOW_MS,
      algorithm,
      timeoutMs: 200,
      cooldownMs: 1000,
      tickMs: (WINDOW_MS * WORKERS) / (3 * LIMIT),
    },
  }
  const faults = offsets.flatMap((offsetMs) => FALLBACK_FAULTS.map((fault) => ({ fault, offsetMs })))
  const result = await runFallbackFaults(options, faults)
  const text = [
    `${algorithm}, ${WORKERS} processes (FleetSize counted ${result.processes.join(', ')}), limit ${LIMIT} per ${WINDOW_MS} ms, offered 3×; unhandled: ${result.unhandled}; exit codes: ${result.exitCodes.join(', ')}`,
    '',
    '| fault | into the window | admitted in the window of the fault | of which by the fallbacks | admitted in the next window |',
    '|---|---:|---:|---:|---:|',
    ...result.windows.map(
      (w) => `| ${w.fault} | ${w.offsetMs} ms | ${w.admitted} | ${w.byFallback} | ${w.admittedNext} |`,
    ),
  ].join('\n')
  return { text, ok: result.unhandled === 0 && result.exitCodes.every((code) => code === 0) }
}
