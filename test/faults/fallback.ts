// RedisStore + FallbackShare + FleetSize through every fault of FALLBACK_FAULTS, 1 s and 9 s into a
// 10 s window (fixed window unless --algorithm says otherwise). Prints the table of test/faults/README.md.
//   pnpm tsx --conditions=source test/faults/fallback.ts [--algorithm sliding-window] [--offsets 1000,9000]
import type { AlgorithmName } from '@sluice/core'
import { fallbackTable } from './fallback-table.js'

const arg = (name: string) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}
const algorithm = (arg('--algorithm') ?? 'fixed-window') as AlgorithmName
const offsets = (arg('--offsets') ?? '1000,9000').split(',').map(Number)
const { text, ok } = await fallbackTable(algorithm, offsets)
console.log(text)
process.exit(ok ? 0 : 1)
