// A fallback that shares, measured: four app processes at 3× a limit, Redis frozen (SIGSTOP)
// for 3 s, once with a MemoryStore fallback in each process and once with a FallbackShare of the
// processes a FleetSize counts; the breaker's default 1 s cooldown, the README's 200 ms timeout.
//   pnpm tsx --conditions=source test/faults/fallback.ts
import { runFallbackStall, type SuiteOptions } from './run.js'

/** 200 per 10 s on the hot key; each process asks 100 times a second: 20× the limit in all. */
const options: SuiteOptions = {
  workers: 4,
  faultMs: 3000,
  recoveryMs: 3000,
  baselineMs: 1000,
  worker: { limit: 200, windowMs: 10_000, timeoutMs: 200, cooldownMs: 1000, tickMs: 10 },
}

let ok = true
console.log(
  '| fallback | processes counted | admitted by the fallbacks during the 3 s stall (limit 200) | recovery ms | unhandled |',
)
console.log('|---|---|---:|---:|---:|')
for (const fallback of ['memory', 'share'] as const) {
  const result = await runFallbackStall(options, fallback)
  const [f] = result.faults
  console.log(
    `| ${fallback === 'memory' ? '`new MemoryStore()`' : '`FallbackShare` + `FleetSize`'} | ${result.processes.join(', ')} | ${f?.fallbackAdmitted} | ${f?.recoveryMs} | ${result.unhandled} |`,
  )
  ok &&= result.unhandled === 0 && result.exitCodes.every((code) => code === 0)
}
process.exit(ok ? 0 : 1)
