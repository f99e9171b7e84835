/**
 * Two builds of @sluice/core, A and B, side by side on the default decision: ns per awaited
 * `limiter.consume` on a MemoryStore, 10 000 keys, limits high enough that nothing is denied.
 * For a change to the decision's path: build the commit before it somewhere outside the repo
 * (`git worktree add /tmp/old <commit>`, install, `pnpm --filter @sluice/core build`) and give its
 * dist as A; B defaults to this tree's `packages/core/dist` (build it first).
 *
 * Timed: each row runs in its own process (as in an app with one kind of limiter), which loads
 * both builds (each its own module, so its own compiled code) and alternates them, A then B then
 * B then A, each turn `--ops` decisions after both have warmed up: the machine's noise falls on
 * both alike. The table gives each build's median and the median of the rounds' B ÷ A.
 *
 * With --instructions each build runs each row in a child under valgrind's callgrind instead, as
 * `bench:core --instructions` does (one thread, fixed seeds, a clock that moves with the decisions),
 * counting the main thread's instructions over the measured decisions: 300 000 of them (the
 * 1 s policies' sub-windows each turn over once), after 900 000 (V8 has compiled what they run)
 * and a full collection (every run meets as many scavenges). The same count comes back run
 * after run.
 *
 *   pnpm bench:core-ab --a /tmp/old/packages/core/dist/index.js [--b <dist>] [--rounds 20] [--ops 100000]
 *   pnpm bench:core-ab --a <dist> --instructions [--ops 300000]
 *
 * `--only <text>` runs the rows whose names hold it.
 */
import { execFileSync } from 'node:child_process'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { buildSync } from 'esbuild'
import { underCallgrind } from './callgrind.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] as string)
}
const INSTRUCTIONS = args.includes('--instructions')
const COUNTING = args.includes('--counting')
const ROUNDS = Number(option('rounds', '20'))
const OPS = Number(option('ops', INSTRUCTIONS ? '300000' : '100000'))
// Counted, past the first turns of the two-policy rows' 1 s sub-windows (300 000 decisions on the
// counting clock), whose code V8 would otherwise compile inside the measured decisions.
const WARM = Number(option('warm', INSTRUCTIONS || COUNTING ? '900000' : '300000'))
const A = resolve(option('a', ''))
const B = resolve(option('b', fileURLToPath(new URL('../packages/core/dist/index.js', import.meta.url))))
if (option('a', '') === '') throw new Error('--a <path to the other build’s dist/index.js> is required')

/** The rows: the issue-38 table's, and bench:core's two-policy sliding log; each a `limits` for `createLimiter`. */
const ROWS: Record<string, unknown> = {
  "one policy, '1000000/min'": '1000000/min',
  "two policies, '1000000/min' + '100000/s'": ['1000000/min', '100000/s'],
  'fixed window': { limit: 1_000_000, window: 60_000, algorithm: 'fixed-window' },
  'token bucket': { limit: 1_000_000, window: 60_000, algorithm: 'token-bucket' },
  // bench:core's row closest to rate-limiter-flexible's time.
  'sliding log, two policies': [
    { limit: 10_000, window: 60_000, algorithm: 'sliding-log' },
    { limit: 10_000, window: 1_000, algorithm: 'sliding-log', name: 'burst' },
  ],
}
/** With `--only <text>`, the rows whose names hold it. */
const ONLY = option('only', '')
const SELECTED = Object.keys(ROWS).filter((row) => row.includes(ONLY))
const KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

/** Under callgrind: a clock that moves 1 ms per 3 000 decisions (a timed run's pace), as in `core.bench.ts`. */
let decided = 0
const virtualNow = () => 1_800_000_000_000 + Math.floor(decided / 3000)

interface Core {
  createLimiter(options: { limits: unknown; store: unknown }): { consume(key: string): Promise<unknown> }
  MemoryStore: new (options: object) => unknown
}

async function limiterOf(dist: string, row: string): Promise<(key: string) => Promise<unknown>> {
  const core = (await import(pathToFileURL(dist).href)) as Core
  const store = new core.MemoryStore({ maxKeys: 50_000, ...(COUNTING ? { now: virtualNow } : {}) })
  const limiter = core.createLimiter({ limits: ROWS[row], store })
  return (key) => limiter.consume(key)
}

/** CPU ns per decision over `OPS` decisions. */
async function turn(decide: (key: string) => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < OPS; i++, decided++) await decide(KEYS[i % KEYS.length] as string)
  const { user, system } = process.cpuUsage(start)
  return ((user + system) * 1000) / OPS
}

/**
 * Warms up through `turn` itself: measured in a loop of its own, the first turn would pay for
 * that loop's compilation (on-stack replacement), under callgrind about a third of the count.
 */
async function warm(decide: (key: string) => Promise<unknown>): Promise<void> {
  for (let done = 0; done < WARM; done += OPS) await turn(decide)
}

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((x, y) => x - y)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** One row, both builds alternating, in this process: prints `[a[], b[]]` as JSON. */
async function timedRow(row: string): Promise<void> {
  const a = await limiterOf(A, row)
  const b = await limiterOf(B, row)
  await warm(a)
  await warm(b)
  const times: [number[], number[]] = [[], []]
  for (let round = 0; round < ROUNDS; round++) {
    // A B B A: neither build always goes first.
    if (round % 2 === 0) {
      times[0].push(await turn(a))
      times[1].push(await turn(b))
    } else {
      times[1].push(await turn(b))
      times[0].push(await turn(a))
    }
  }
  console.log(JSON.stringify(times))
}

/** Under callgrind: one build, one row; the measured decisions between a zero and a dump. */
async function countedRow(dist: string, row: string): Promise<void> {
  const decide = await limiterOf(dist, row)
  await warm(decide)
  // An empty young generation: the measured decisions see as many scavenges in every run.
  ;(globalThis as { gc?: () => void }).gc?.()
  execFileSync('callgrind_control', ['--instr=on', String(process.pid)])
  execFileSync('callgrind_control', ['--zero', String(process.pid)])
  await turn(decide)
  execFileSync('callgrind_control', ['--dump', String(process.pid)])
}

function instructions(script: string, dist: string, row: string): number {
  const { instructions: counted } = underCallgrind([
    script,
    ...['--a', A, '--b', B, '--ops', String(OPS), '--warm', String(WARM)],
    ...['--row', row, '--dist', dist, '--counting'],
  ])
  return counted / OPS
}

if (COUNTING) {
  await countedRow(option('dist', ''), option('row', ''))
} else if (args.includes('--row')) {
  await timedRow(option('row', ''))
} else {
  // The children run this file compiled to plain JavaScript on plain node (no tsx loader), as `core.bench.ts`'s do.
  const script = fileURLToPath(new URL('./node_modules/.cache/core-ab.bench.mjs', import.meta.url))
  buildSync({
    entryPoints: [fileURLToPath(import.meta.url)],
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile: script,
  })
  console.log(`A: ${A}\nB: ${B}\nnode ${process.version}; ${OPS} decisions a turn over ${KEYS.length} keys`)
  if (INSTRUCTIONS) {
    console.log('\n| row | A, instructions/decision | B | B ÷ A |\n|---|---:|---:|---:|')
    for (const row of SELECTED) {
      const a = instructions(script, A, row)
      const b = instructions(script, B, row)
      console.log(`| ${row} | ${Math.round(a)} | ${Math.round(b)} | ${(b / a).toFixed(3)} |`)
    }
  } else {
    console.log(`${ROUNDS} rounds of A B (then B A), one process per row\n`)
    console.log('| row | A, ns | B, ns | B ÷ A (median of rounds) | rounds |\n|---|---:|---:|---:|---:|')
    for (const row of SELECTED) {
      const output = execFileSync(process.execPath, [script, ...args, '--a', A, '--b', B, '--row', row], {
        encoding: 'utf8',
      })
      const [a, b] = JSON.parse(output.trim().split('\n').pop() as string) as [number[], number[]]
      const ratios = a.map((x, i) => (b[i] as number) / x)
      console.log(
        `| ${row} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | ${median(ratios).toFixed(3)} | ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} |`,
      )
    }
  }
}
