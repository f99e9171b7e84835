/**
 * bench:core's question for SyncedStore: what one awaited decision costs, beside MemoryStore with
 * the same limits and the same loop, and (with `--a`) the same SyncedStore row on another build,
 * such as the commit before a change to `packages/redis/src/synced`.
 *
 * Rows: fixed and sliding window, one policy ('1000000/min') and two ('1000000/min' + a 1 s
 * '100000/s' named burst), over 1 000 and 100 000 keys decided in turn; limits high enough that
 * nothing is denied and no key goes exact. SyncedStore runs as an app runs it: a real Redis
 * (127.0.0.1:6379, or `SLUICE_BENCH_REDIS`, under a prefix of the run's own, deleted after), the
 * default interval (100 ms), and a loop that yields to the event loop after every `--batch`
 * decisions (`setImmediate`), so each sync is sent on time and its reply read; the row prints how
 * many syncs ran while it was measured, and how often the store was degraded (it should be never).
 * A row's figure therefore holds the syncs' own work on the main thread, as an app pays it. Every
 * row, MemoryStore's too, runs in that loop: the yields cost the same on both sides.
 *
 * Timed: each row and build runs in a fresh process (this file bundled to plain JavaScript, the
 * builds' `dist` as built: `pnpm bench:core-synced` builds this tree's core and redis first; build
 * the other tree yourself), which warms up for at least `--warm-ms` of wall time and three passes
 * over the keys (the 1 s sub-windows turn over many times, syncs reach their steady state), then
 * prints the CPU time (user + system, every thread) per decision over `--ops` decisions. Rounds
 * visit the rows in turn and A before B, then B before A; the table gives medians, and the
 * medians of the ratios within a round.
 *
 * With --instructions each row and build runs once under valgrind's callgrind instead, counting
 * the main thread's instructions per measured decision (node --single-threaded, fixed seeds: the
 * count repeats to a few per thousand). Valgrind runs code about 50 times slower while the wall
 * clock runs as ever, so there the stores read a clock that moves with the decisions (`virtualNow`:
 * 1 ms per `--pace` decisions, a timed SyncedStore run's pace here) and the timers run on that
 * clock too (`virtualTimers`): a sync every 100 ms of it, as many decisions apart as in a timed run.
 * The warm-up there ends with a full collection and `--ops` decisions more (see `measureOne`).
 * At this pace the warm-up holds only a few syncs, so V8 may still be optimising the sync's code
 * in the measured decisions (a few hundred instructions a decision on the 1 000-key rows).
 *
 *   pnpm bench:core-synced [--a <other worktree>] [--rounds 5] [--ops 300000] [--warm-ms 2000] [--only text+text]
 *   pnpm bench:core-synced --instructions [--a <other worktree>] [--ops 100000] [--warm 600000]
 */
import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { buildSync } from 'esbuild'
import { Redis } from 'ioredis'
import { underCallgrind } from './callgrind.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] as string)
}
const INSTRUCTIONS = args.includes('--instructions')
/** In a child run under callgrind. */
const COUNTING = args.includes('--counting')
const ROUNDS = Number(option('rounds', INSTRUCTIONS ? '1' : '5'))
const OPS = Number(option('ops', INSTRUCTIONS || COUNTING ? '100000' : '300000'))
const WARM_MS = Number(option('warm-ms', '2000'))
/** Decisions to warm up with at least (and three passes over the keys). */
const WARM = Number(option('warm', INSTRUCTIONS || COUNTING ? '600000' : '300000'))
/** Decisions between two yields to the event loop. */
const BATCH = Number(option('batch', '100'))
/** Under callgrind: decisions per ms of `virtualNow`. */
const PACE = Number(option('pace', '1000'))
const REDIS_URL = process.env.SLUICE_BENCH_REDIS ?? 'redis://127.0.0.1:6379'
const HERE = fileURLToPath(new URL('..', import.meta.url))
const B = resolve(option('b', HERE))
const A = option('a', '') === '' ? undefined : resolve(option('a', ''))

type Kind = 'fixed-window' | 'sliding-window'
interface Row {
  readonly name: string
  readonly synced: boolean
  readonly algorithm: Kind
  readonly policies: 1 | 2
  readonly keys: number
}
const ROWS: Row[] = []
for (const keys of [1_000, 100_000]) {
  for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
    for (const policies of [1, 2] as const) {
      for (const synced of [false, true]) {
        const store = synced ? 'SyncedStore' : 'MemoryStore'
        const name = `${store} ${algorithm}, ${policies === 1 ? '1 policy' : '2 policies'}, ${keys} keys`
        ROWS.push({ name, synced, algorithm, policies, keys })
      }
    }
  }
}
/** `--only a+b`: the rows whose names hold every part. */
const SELECTED = ROWS.filter((row) =>
  option('only', '')
    .split('+')
    .every((part) => row.name.includes(part)),
)

/** Decisions made so far in this child: what `virtualNow` reads. */
let decided = 0
/** Under callgrind, the stores' clock (and the timers'): 1 ms per PACE decisions, from a minute boundary. */
const virtualNow = () => 1_800_000_000_000 + Math.floor(decided / PACE)

interface Core {
  createLimiter(options: { limits: unknown; store: unknown }): { consume(key: string): Promise<unknown> }
  MemoryStore: new (options: object) => unknown
}
interface RedisPackage {
  SyncedStore: new (options: object) => { degraded: boolean; close(): Promise<unknown> }
}

/**
 * setTimeout and setInterval on `virtualNow` (under callgrind): the sync loop's timer, and the
 * watches on a sync in flight, then come as many decisions apart as in a timed run. `fire` runs
 * those due; the loop calls it at each yield.
 */
function virtualTimers(): { fire(): void } {
  interface Timer {
    at: number
    readonly every: number
    readonly run: () => void
    cleared: boolean
  }
  const timers = new Set<Timer>()
  const handle = (timer: Timer) =>
    Object.assign(timer, {
      unref: () => timer,
      ref: () => timer,
      hasRef: () => false,
      refresh: () => timer,
    })
  const add = (run: (...a: unknown[]) => void, ms: number | undefined, every: boolean, rest: unknown[]) => {
    const delay = Math.max(1, ms ?? 0)
    const timer: Timer = { at: virtualNow() + delay, every: every ? delay : 0, run: () => run(...rest), cleared: false }
    timers.add(timer)
    return handle(timer)
  }
  const clear = (timer: unknown) => {
    if (timer !== null && typeof timer === 'object' && timers.has(timer as Timer)) {
      ;(timer as Timer).cleared = true
      timers.delete(timer as Timer)
    }
  }
  const scope = globalThis as Record<string, unknown>
  scope.setTimeout = (run: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) => add(run, ms, false, rest)
  scope.setInterval = (run: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) => add(run, ms, true, rest)
  scope.clearTimeout = clear
  scope.clearInterval = clear
  return {
    fire() {
      const now = virtualNow()
      const due = [...timers].filter((timer) => timer.at <= now).sort((x, y) => x.at - y.at)
      for (const timer of due) {
        if (timer.cleared) continue
        if (timer.every > 0) timer.at = now + timer.every
        else timers.delete(timer)
        timer.run()
      }
    },
  }
}

/** A child's limiter for the row on the build at `root`, and how to close it. */
async function contender(root: string, row: Row, prefix: string, onSync: (keys: number) => void) {
  const core = (await import(pathToFileURL(join(root, 'packages/core/dist/index.js')).href)) as Core
  const redis = (await import(pathToFileURL(join(root, 'packages/redis/dist/index.js')).href)) as RedisPackage
  const minute = { limit: 1_000_000, window: 60_000, algorithm: row.algorithm }
  const burst = { limit: 100_000, window: 1_000, algorithm: row.algorithm, name: 'burst' }
  const limits = row.policies === 1 ? [minute] : [minute, burst]
  const clock = COUNTING ? { now: virtualNow } : {}
  if (!row.synced) {
    const store = new core.MemoryStore({ maxKeys: 2 * row.keys, ...clock })
    const limiter = core.createLimiter({ limits, store })
    return { decide: (key: string) => limiter.consume(key), degraded: () => false, close: async () => {} }
  }
  const client = new Redis(REDIS_URL)
  await client.ping()
  const store = new redis.SyncedStore({
    client,
    prefix,
    maxKeys: 2 * row.keys,
    observe: (event: { type: string; keys?: number }) => {
      if (event.type === 'sync') onSync(event.keys ?? 0)
    },
    ...clock,
  })
  const limiter = core.createLimiter({ limits, store })
  return {
    decide: (key: string) => limiter.consume(key),
    degraded: () => store.degraded,
    close: async () => {
      await store.close()
      client.disconnect()
    },
  }
}

/** In a child: warm up, then print the measured decisions' figures as JSON. */
async function measureOne(): Promise<void> {
  const row = ROWS.find((r) => r.name === option('row', '')) as Row
  const keys = Array.from({ length: row.keys }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  let syncs = 0
  let syncKeys = 0
  const { decide, degraded, close } = await contender(option('root', ''), row, option('prefix', ''), (carried) => {
    syncs++
    syncKeys += carried
  })
  const timers = COUNTING ? virtualTimers() : undefined
  let degradedBatches = 0
  const yieldTurn = () => new Promise<void>((done) => setImmediate(done))
  /** `count` decisions over the keys in turn, yielding every BATCH; the same function warms and measures. */
  const run = async (count: number): Promise<void> => {
    for (let done = 0; done < count; ) {
      const end = Math.min(done + BATCH, count)
      for (; done < end; done++, decided++) await decide(keys[decided % keys.length] as string)
      if (degraded()) degradedBatches++
      timers?.fire()
      await yieldTurn()
    }
  }
  const warmUntil = COUNTING ? 0 : performance.now() + WARM_MS
  const warmAtLeast = Math.max(WARM, 3 * row.keys)
  for (let done = 0; done < warmAtLeast || performance.now() < warmUntil; done += OPS) await run(OPS)
  if (COUNTING) {
    // A full collection, then as many decisions again: the collection drops maps that optimised
    // code depended on (the SyncedStore rows deoptimised and recompiled their whole decision
    // path just after it, 2 000 instructions a decision when that fell in the count), and each
    // run measures from the same point after it.
    ;(globalThis as { gc?: () => void }).gc?.()
    await run(OPS)
    execFileSync('callgrind_control', ['--instr=on', String(process.pid)])
    execFileSync('callgrind_control', ['--zero', String(process.pid)])
  }
  syncs = 0
  syncKeys = 0
  degradedBatches = 0
  const start = process.cpuUsage()
  const wallStart = performance.now()
  await run(OPS)
  const wall = performance.now() - wallStart
  const { user, system } = process.cpuUsage(start)
  if (COUNTING) execFileSync('callgrind_control', ['--dump', String(process.pid)])
  await close()
  console.log(
    JSON.stringify({
      ns: ((user + system) * 1000) / OPS,
      wallNs: (wall * 1e6) / OPS,
      syncs,
      syncKeys,
      degradedBatches,
    }),
  )
  process.exit(0)
}

interface Figures {
  ns: number
  wallNs: number
  syncs: number
  syncKeys: number
  degradedBatches: number
}

/** Deletes what a SyncedStore child left in Redis under its prefix. */
async function sweep(prefix: string): Promise<void> {
  const client = new Redis(REDIS_URL)
  let cursor = '0'
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000)
    if (found.length > 0) await client.unlink(...found)
    cursor = next
  } while (cursor !== '0')
  client.disconnect()
}

let runs = 0
/** One row on one build in a fresh process (under callgrind with --instructions): its figures. */
async function measure(script: string, root: string, row: Row): Promise<Figures> {
  const prefix = `bench-core-synced:${process.pid}:${runs++}:`
  const childArgs = [script, '--child', '--row', row.name, '--root', root, '--prefix', prefix, ...passed()]
  try {
    if (!INSTRUCTIONS) {
      const output = execFileSync(process.execPath, ['--expose-gc', ...childArgs], { encoding: 'utf8' })
      return JSON.parse(output.trim().split('\n').pop() as string) as Figures
    }
    const { stdout, instructions } = underCallgrind([...childArgs, '--counting'])
    const figures = JSON.parse(stdout.trim().split('\n').pop() as string) as Figures
    return { ...figures, ns: instructions / OPS }
  } finally {
    if (row.synced) await sweep(prefix)
  }
}

/** `measure`, telling stderr each figure as it comes (a counted 100 000-key row takes minutes). */
async function measureTold(script: string, root: string, row: Row): Promise<Figures> {
  const figures = await measure(script, root, row)
  process.stderr.write(`${row.name} (${root}): ${figures.ns.toFixed(0)}\n`)
  return figures
}

/** The options a child takes from the parent's command line. */
function passed(): string[] {
  const out: string[] = []
  for (const name of ['ops', 'warm-ms', 'warm', 'batch', 'pace']) {
    if (args.includes(`--${name}`)) out.push(`--${name}`, option(name, ''))
  }
  return out
}

const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((x, y) => x - y)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

if (args.includes('--child')) {
  await measureOne()
} else {
  // One bundle per run: two runs at once (of two trees' rows) must not rewrite each other's.
  const script = fileURLToPath(new URL(`./node_modules/.cache/core-synced.${process.pid}.bench.mjs`, import.meta.url))
  buildSync({
    entryPoints: [fileURLToPath(import.meta.url)],
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outfile: script,
    logLevel: 'warning',
  })
  if (INSTRUCTIONS) execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
  /** Per row: B's figures, and A's (SyncedStore rows, with --a), a round each. */
  const samples = new Map(SELECTED.map((row) => [row.name, { a: [] as Figures[], b: [] as Figures[] }]))
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < SELECTED.length; i++) {
      const row = SELECTED[(i + round) % SELECTED.length] as Row
      const sample = samples.get(row.name) as { a: Figures[]; b: Figures[] }
      const both = A !== undefined && row.synced
      // A then B in even rounds, B then A in odd ones: neither build always goes first.
      if (both && round % 2 === 0) sample.a.push(await measureTold(script, A, row))
      sample.b.push(await measureTold(script, B, row))
      if (both && round % 2 === 1) sample.a.push(await measureTold(script, A, row))
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`)
  }
  const unit = INSTRUCTIONS ? 'instructions' : 'CPU ns'
  console.log(
    `node ${process.version}; B: ${B}${A === undefined ? '' : `; A: ${A}`}\n` +
      `${OPS} awaited decisions after at least ${WARM} (and 3 passes over the keys${INSTRUCTIONS ? `, then a full collection and ${OPS} more` : `, ${WARM_MS} ms`}) to warm up, ` +
      `a yield every ${BATCH}; ${unit} per decision, median of ${ROUNDS} round(s)` +
      (INSTRUCTIONS ? `; clock and timers at 1 ms per ${PACE} decisions` : '') +
      '\n',
  )
  console.log(
    `| row | B, ${unit} | ${A === undefined ? '' : 'A | B ÷ A (rounds) | '}÷ MemoryStore (B) | syncs measured | sub-windows synced | degraded batches |`,
  )
  console.log(`|---|---:|${A === undefined ? '' : '---:|---:|'}---:|---:|---:|---:|`)
  for (const row of SELECTED) {
    const { a, b } = samples.get(row.name) as { a: Figures[]; b: Figures[] }
    const own = median(b.map((f) => f.ns))
    const peer = samples.get(row.name.replace('SyncedStore', 'MemoryStore'))?.b
    const versus = row.synced && peer !== undefined ? `${(own / median(peer.map((f) => f.ns))).toFixed(2)}×` : ''
    let ab = ''
    if (A !== undefined) {
      if (a.length === 0) ab = ' | |'
      else {
        const ratios = b.map((f, i) => f.ns / (a[i] as Figures).ns)
        ab = ` ${median(a.map((f) => f.ns)).toFixed(0)} | ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`
      }
    }
    const syncs = row.synced ? median(b.map((f) => f.syncs)).toFixed(0) : ''
    const carried = row.synced ? median(b.map((f) => f.syncKeys)).toFixed(0) : ''
    const degraded = row.synced ? Math.max(...[...a, ...b].map((f) => f.degradedBatches)).toFixed(0) : ''
    console.log(`| ${row.name} | ${own.toFixed(0)} |${ab} ${versus} | ${syncs} | ${carried} | ${degraded} |`)
  }
  rmSync(script, { force: true })
}
