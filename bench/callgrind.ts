import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Runs `node <args>` under callgrind on fixed hash and random seeds, counting only while the child
 * has turned instrumentation on (`callgrind_control --instr=on` after its warm-up, which runs
 * several times faster uninstrumented): its stdout, and the instructions its main thread ran.
 */
export function underCallgrind(args: readonly string[]): { stdout: string; instructions: number } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'))
  try {
    const stdout = execFileSync(
      'valgrind',
      [
        '--tool=callgrind',
        '--smc-check=all-non-file',
        '--separate-threads=yes',
        '--instr-atstart=no',
        `--callgrind-out-file=${join(dir, 'out')}`,
        process.execPath,
        '--single-threaded',
        '--expose-gc',
        '--hash-seed=1',
        '--random-seed=1',
        ...args,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    )
    // One file per thread (--separate-threads): the main thread's.
    const dump = readFileSync(join(dir, 'out.1-01'), 'utf8')
    const events = /^events: (.+)$/m.exec(dump)?.[1]?.split(' ') ?? []
    const summary = /^summary: (.+)$/m.exec(dump)?.[1]?.split(' ').map(Number) ?? []
    return { stdout, instructions: summary[events.indexOf('Ir')] as number }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
