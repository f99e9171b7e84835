/**
 * CPU ns per awaited decision, side by side: sluice's MemoryStore (each algorithm, one and two
 * policies), express-rate-limit's MemoryStore, rate-limiter-flexible's RateLimiterMemory (and a
 * pair of them with the same two limits as sluice's two-policy rows), and an
 * awaited bare Map counter as the floor, with and without a clock read (the reference), and a
 * hand-written fixed window that answers with a Decision's fields: the least a limiter with
 * sluice's answer can cost (and a hand-written pair of exact logs: the least the two-policy
 * sliding log can cost). Limits are high so that nothing is denied (rate-limiter-flexible
 * rejects on denial, which would measure exceptions).
 *
 * Each measurement runs in a fresh process, as in an app with one kind of limiter: in one shared
 * process every contender's code would see every other's types and the JIT would optimise none
 * of them well. Rounds visit the contenders in rotating order; the table shows medians. Each
 * child is this file bundled to plain JavaScript with its packages external, on plain node, so
 * sluice runs as built (`pnpm bench:core` builds @sluice/core's dist first) and the peers as
 * installed.
 *
 * The "busy keys" rows have a 1 s window: every key is decided every few milliseconds, so the
 * sliding window's counts spread over every sub-window (100 ms) and slide on each decision or so,
 * where the 60 s rows keep each key's counts in one or two sub-windows; and the sliding log holds
 * a few hundred entries per key, one leaving for each one added (the steady state, with the
 * log's compaction), where the 60 s rows' logs only grow.
 *
 * Each child warms up with at least as many decisions as it measures and for at least 1.5 s of
 * wall time: the 1 s policies' sub-windows and logs turn over in that time, and the recompilation
 * that causes (on a compiler thread, whose CPU time process.cpuUsage counts) is over before the
 * measured decisions start. With a 60 ms warm-up the two-policy sliding window read 250 or 400+ ns
 * from one run to the next, depending on where that work landed. The 60 s sliding-log rows warm
 * up by count alone (see `WARMED_BY_COUNT`).
 *
 * With --instructions each child runs under valgrind's callgrind instead, which counts the
 * instructions its main thread runs for the measured decisions (node in one thread, so the
 * compiler's and the garbage collector's work is counted too, with fixed hash and random seeds).
 * A count is the same to a few per thousand from run to run, where CPU time moves by ±15 % on
 * this shared machine, so one round is enough to tell a change of a few per cent. It is not
 * time: a cache miss or a mispredicted branch costs no more than any other instruction, so the
 * timed run stays the figure for the goals; the count shows where a change helps and by how much.
 * Valgrind runs code about 50 times slower while the clock runs as ever, so sluice's stores there
 * read a clock that moves with the decisions instead (`virtualNow`: 1 ms per 3 000, the pace of
 * a timed run here), and a 1 s policy holds as many entries and sub-windows as in a timed run.
 *
 * With --cache as well, callgrind also simulates this machine's caches (given: valgrind misreads
 * this VM's L3) and the table shows, per decision, the reads that miss the 32 KB first-level
 * cache and the reads and writes that miss the 32 MB last-level one: where a row's time goes to
 * memory rather than to instructions. A simulation, not the hardware: it has no prefetcher, and
 * the real last-level cache is shared with the machine's other tenants.
 *
 *   pnpm bench:core [--rounds 5] [--ops 300000] [--warm-ms 1500]
 *   pnpm bench:core --instructions [--cache] [--rounds 1] [--ops 50000]
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ALGORITHMS, type AlgorithmName, createLimiter, MemoryStore, type PolicyOptions } from '@sluice/core'
import { buildSync } from 'esbuild'
import { MemoryStore as ErlMemoryStore } from 'express-rate-limit'
import { RateLimiterMemory } from 'rate-limiter-flexible'

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] as string)
}
/** Counts instructions with valgrind instead of timing: steadier on a shared machine (see the header). */
const INSTRUCTIONS = args.includes('--instructions')
const ROUNDS = Number(option('rounds', INSTRUCTIONS ? '1' : '5'))
const OPS = Number(option('ops', INSTRUCTIONS ? '50000' : '300000'))
const WARM_MS = Number(option('warm-ms', '1500'))
/** With --instructions: simulate the caches too (see the header). */
const CACHE = args.includes('--cache')
/** In a child run by --instructions. */
const COUNTING = args.includes('--counting')
/** Decisions made so far in this child: what `virtualNow` reads. */
let decided = 0
/** `virtualNow`'s pace: about 330 ns per decision, a timed run's on this machine. */
const DECISIONS_PER_MS = 3000
/**
 * Under callgrind, sluice's stores' clock: 1 ms per DECISIONS_PER_MS decisions, from a minute
 * boundary. Everywhere else they read `Date.now`.
 */
const virtualNow = () => 1_800_000_000_000 + Math.floor(decided / DECISIONS_PER_MS)
const sluiceStore = () => new MemoryStore({ maxKeys: 50_000, ...(COUNTING ? { now: virtualNow } : {}) })
const KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

const FLOOR = 'floor: awaited Map counter'
const CLOCK = 'reference: awaited Map counter + Date.now()'
const HAND = 'hand-written fixed window, 1 policy, Decision-shaped answer'
/** The sliding-log rows' counterpart of HAND: see `handWrittenLogs`. */
const HAND_LOGS = 'hand-written sliding log, 2 policies, Decision-shaped answer'
const ERL = 'express-rate-limit MemoryStore'
const RLF = 'rate-limiter-flexible RateLimiterMemory'
/**
 * The same two limits as sluice's two-policy rows: two RateLimiterMemory consumed in turn, as two
 * middlewares would. Its RateLimiterUnion of the same two took 1.6× as long (1 735 against 1 070 ns).
 */
const RLF_TWO = 'rate-limiter-flexible, 2 RateLimiterMemory in turn'
const sluice = (algorithm: AlgorithmName, policies: 1 | 2) =>
  `sluice ${algorithm}, ${policies} ${policies === 1 ? 'policy' : 'policies'}`
const BUSY = 'sluice sliding-window, 1 policy, busy keys'
const BUSY_LOG = 'sluice sliding-log, 1 policy, busy keys'
const NAMES = [
  FLOOR,
  CLOCK,
  HAND,
  HAND_LOGS,
  ...ALGORITHMS.flatMap((a) => [sluice(a, 1), sluice(a, 2)]),
  BUSY,
  BUSY_LOG,
  ERL,
  RLF,
  RLF_TWO,
]
/**
 * Rows warmed up by count alone: no entry leaves their logs during the run, so a log's length is
 * the decisions its key has seen. Warmed up for a time, it was whatever that time allowed, and
 * every key's log outgrew its array within the same few thousand decisions (the keys take turns),
 * which, when the measured decisions held that moment, doubled the figure. They warm up by at
 * least LOG_WARM_DECISIONS, under callgrind too: 30 entries per key when measuring starts.
 */
const WARMED_BY_COUNT = new Set([sluice('sliding-log', 1), sluice('sliding-log', 2), HAND_LOGS])
const LOG_WARM_DECISIONS = 300_000
/**
 * Rows with a 1 s policy, whose states turn over within the warm-up: under callgrind they warm up
 * for WARM_MS of `virtualNow` (millions of decisions), as a timed run does on the real clock.
 * The other rows' states are the same after a few decisions per key, so there they warm up by
 * count alone (under callgrind a million decisions take about a minute).
 */
const TURNING_OVER = new Set([...ALGORITHMS.map((a) => sluice(a, 2)), BUSY, BUSY_LOG])

/** Builds one contender's decide function (and its cleanup) by name. */
function contender(name: string): { decide: (key: string) => Promise<unknown>; close?: () => void } {
  if (name === FLOOR || name === CLOCK) {
    const counts = new Map<string, number>()
    const clock = name === CLOCK
    return {
      decide: async (key) => {
        const count = (counts.get(key) ?? 0) + 1
        counts.set(key, count)
        // Every limiter reads the clock once per decision; on some VMs that alone is ~50–100 ns.
        return clock ? Date.now() + count : count
      },
    }
  }
  if (name === HAND) return { decide: handWritten() }
  if (name === HAND_LOGS) return { decide: handWrittenLogs() }
  if (name === ERL) {
    const store = new ErlMemoryStore()
    store.init({ windowMs: 60_000 } as never)
    return { decide: (key) => store.increment(key), close: () => store.shutdown() }
  }
  if (name === RLF) {
    const limiter = new RateLimiterMemory({ points: 1_000_000, duration: 60 })
    return { decide: (key) => limiter.consume(key) }
  }
  if (name === RLF_TWO) {
    const minute = new RateLimiterMemory({ keyPrefix: 'minute', points: 10_000, duration: 60 })
    const burst = new RateLimiterMemory({ keyPrefix: 'burst', points: 10_000, duration: 1 })
    return {
      decide: async (key) => {
        await minute.consume(key)
        return burst.consume(key)
      },
    }
  }
  if (name === BUSY || name === BUSY_LOG) {
    const algorithm = name === BUSY ? 'sliding-window' : 'sliding-log'
    const limits = [{ limit: name === BUSY ? 1_000_000 : 10_000, window: 1_000, algorithm } as const]
    const limiter = createLimiter({ limits, store: sluiceStore() })
    return { decide: (key) => limiter.consume(key) }
  }
  const algorithm = ALGORITHMS.find((a) => name === sluice(a, 1) || name === sluice(a, 2)) as AlgorithmName
  const minute: PolicyOptions = { limit: 10_000, window: 60_000, algorithm }
  const second: PolicyOptions = { limit: 10_000, window: 1_000, algorithm, name: 'burst' }
  const limits = name === sluice(algorithm, 1) ? [minute] : [minute, second]
  const limiter = createLimiter({ limits, store: sluiceStore() })
  return { decide: (key) => limiter.consume(key) }
}

/**
 * What any limiter that answers as sluice does must spend, written for this one case: a fixed
 * window's count per key, and a decision with its one policy's entry (the fields of sluice's
 * `Decision` and `PolicyDecision`). No options, validation, stores, errors or other algorithms.
 */
function handWritten(): (key: string) => Promise<unknown> {
  const limit = 10_000
  const window = 60_000
  const windows = new Map<string, { start: number; count: number }>()
  return async (key) => {
    const now = Date.now()
    const start = now - (now % window)
    let state = windows.get(key)
    if (state === undefined) {
      state = { start, count: 0 }
      windows.set(key, state)
    } else if (state.start !== start) {
      state.start = start
      state.count = 0
    }
    const allowed = state.count < limit
    if (allowed) state.count++
    const resetAfter = start + window - now
    const entry = {
      name: 'default',
      algorithm: 'fixed-window',
      limit,
      window,
      allowed,
      remaining: limit - state.count,
      resetAfter,
      retryAfter: allowed ? 0 : resetAfter,
      delay: 0,
      nextAfter: undefined,
    }
    return {
      allowed,
      limit,
      remaining: entry.remaining,
      resetAfter,
      retryAfter: entry.retryAfter,
      delay: 0,
      policies: [entry],
      binding: entry,
      key,
      source: 'store',
    }
  }
}

/**
 * `handWritten` for the two-policy sliding-log rows' limits (10 000 a minute and 10 000 a
 * second): per key, two exact logs, each an array of admission times with a head index (moved on
 * as entries leave, the live ones moved down once the dead ones are half), and a decision with
 * both policies' entries. What any limiter that keeps both logs exactly must spend: its writes
 * to two growing arrays per key are the memory traffic that rate-limiter-flexible's one counter
 * does not have.
 */
function handWrittenLogs(): (key: string) => Promise<unknown> {
  const limit = 10_000
  const logs = new Map<string, { minute: HandLog; second: HandLog }>()
  const entry = (name: string, window: number, allowed: boolean, count: number) => ({
    name,
    algorithm: 'sliding-log',
    limit,
    window,
    allowed,
    remaining: limit - count,
    resetAfter: window,
    retryAfter: 0,
    delay: 0,
    nextAfter: undefined,
  })
  return async (key) => {
    const now = COUNTING ? virtualNow() : Date.now()
    let log = logs.get(key)
    if (log === undefined) {
      log = { minute: { times: [], head: 0 }, second: { times: [], head: 0 } }
      logs.set(key, log)
    }
    const inMinute = liveIn(log.minute, now - 60_000)
    const inSecond = liveIn(log.second, now - 1_000)
    const allowed = inMinute < limit && inSecond < limit
    if (allowed) {
      log.minute.times.push(now)
      log.second.times.push(now)
    }
    const taken = allowed ? 1 : 0
    const minute = entry('default', 60_000, allowed, inMinute + taken)
    const second = entry('burst', 1_000, allowed, inSecond + taken)
    const binding = second.remaining < minute.remaining ? second : minute
    return {
      allowed,
      limit,
      remaining: binding.remaining,
      resetAfter: binding.resetAfter,
      retryAfter: 0,
      delay: 0,
      policies: [minute, second],
      binding,
      key,
      source: 'store',
    }
  }
}

/** One of `handWrittenLogs`' logs: admission times, those before `head` gone. */
interface HandLog {
  times: number[]
  head: number
}

/** Drops `log`'s entries at or before `expired` (moving the rest down once half are gone); how many are left. */
function liveIn(log: HandLog, expired: number): number {
  while (log.head < log.times.length && (log.times[log.head] as number) <= expired) log.head++
  if (log.head >= 32 && log.head * 2 >= log.times.length) {
    log.times = log.times.slice(log.head)
    log.head = 0
  }
  return log.times.length - log.head
}

/** In a child: warm up, then print the CPU time (user + system) per decision, not wall time. */
async function measureOne(name: string): Promise<void> {
  const { decide, close } = contender(name)
  const byTime = !WARMED_BY_COUNT.has(name)
  const warmUntil = byTime && !COUNTING ? performance.now() + WARM_MS : 0
  const warmDecisions = !byTime
    ? Math.max(OPS, LOG_WARM_DECISIONS)
    : COUNTING && TURNING_OVER.has(name)
      ? Math.max(OPS, WARM_MS * DECISIONS_PER_MS)
      : OPS
  for (let i = 0; i < warmDecisions || performance.now() < warmUntil; i++, decided++) {
    await decide(KEYS[i % KEYS.length] as string)
  }
  // Under callgrind (--instructions): count only the measured decisions.
  if (COUNTING) execFileSync('callgrind_control', ['--zero', String(process.pid)])
  const start = process.cpuUsage()
  for (let i = 0; i < OPS; i++, decided++) await decide(KEYS[i % KEYS.length] as string)
  const { user, system } = process.cpuUsage(start)
  if (COUNTING) execFileSync('callgrind_control', ['--dump', String(process.pid)])
  close?.()
  console.log(((user + system) * 1000) / OPS)
}

/** A figure per decision: its title, and the callgrind events it sums (none: CPU time). */
interface Column {
  readonly title: string
  readonly events: readonly string[]
}
/** The figure the ratios are made of: CPU time, or instructions. */
const MAIN: Column = INSTRUCTIONS
  ? { title: 'instructions/decision', events: ['Ir'] }
  : { title: 'CPU ns/decision', events: [] }
/** With --cache, the simulated misses per decision, after the ratios. */
const MISSES: readonly Column[] = CACHE
  ? [
      { title: 'first-level read misses', events: ['D1mr'] },
      { title: 'last-level misses', events: ['DLmr', 'DLmw'] },
    ]
  : []
const COLUMNS = [MAIN, ...MISSES]

/** One child's figures (see COLUMNS): CPU ns per decision, or with --instructions the main thread's counts per decision. */
function measure(script: string, name: string): number[] {
  const child = [script, '--one', name, '--ops', String(OPS), '--warm-ms', String(WARM_MS)]
  if (!INSTRUCTIONS) {
    const output = execFileSync(process.execPath, child, { encoding: 'utf8' })
    return [Number(output.trim().split('\n').pop())]
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-core-bench-'))
  try {
    execFileSync(
      'valgrind',
      [
        '--tool=callgrind',
        // V8 rewrites its own machine code: valgrind must notice, or it runs stale translations.
        '--smc-check=all-non-file',
        '--separate-threads=yes',
        // This machine's caches (per core 32 KB first level, and a 32 MB L3), given.
        ...(CACHE ? ['--cache-sim=yes', '--D1=32768,8,64', '--LL=33554432,16,64'] : []),
        `--callgrind-out-file=${join(dir, 'out')}`,
        process.execPath,
        // One thread (compilation and GC on it, counted), Map hashing and V8's randomness fixed:
        // the same child counts the same instructions, to a few per thousand, run after run.
        '--single-threaded',
        '--hash-seed=1',
        '--random-seed=1',
        ...child,
        '--counting',
      ],
      { stdio: 'ignore' },
    )
    // The dump the child asked for (`out.1`), its main thread (`-01`).
    const dump = readFileSync(join(dir, 'out.1-01'), 'utf8')
    const events = /^events: (.+)$/m.exec(dump)?.[1]?.split(' ')
    const summary = /^summary: (.+)$/m.exec(dump)?.[1]?.split(' ').map(Number)
    if (events === undefined || summary === undefined) throw new Error(`no callgrind summary for ${name}`)
    const count = (event: string) => summary[events.indexOf(event)] as number
    return COLUMNS.map(({ events: summed }) => summed.reduce((sum, event) => sum + count(event), 0) / OPS)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (args.includes('--one')) {
  await measureOne(option('one', ''))
} else {
  // The children run this file compiled to plain JavaScript, on plain node: tsx's loader (a
  // hooks thread whose CPU time process.cpuUsage counts, and keepNames wrappers) stays out of
  // every measurement. Packages stay external, so sluice is its built dist, as users get it.
  const script = fileURLToPath(new URL('./node_modules/.cache/core.bench.mjs', import.meta.url))
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
  if (CACHE && !INSTRUCTIONS)
    throw new Error('--cache simulates the caches under callgrind: give it with --instructions')
  if (INSTRUCTIONS) {
    try {
      execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
    } catch {
      throw new Error('valgrind is not installed: apt-get install valgrind (--instructions counts with it)')
    }
  }
  const samples = new Map<string, number[][]>(NAMES.map((n) => [n, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < NAMES.length; i++) {
      const name = NAMES[(i + round) % NAMES.length] as string
      samples.get(name)?.push(measure(script, name))
    }
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`)
  }

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  /** The median of a row's figures in `column` (0: the one the ratios use). */
  const figure = (name: string, column = 0) =>
    median((samples.get(name) as number[][]).map((figures) => figures[column] as number))
  console.log(
    INSTRUCTIONS
      ? `node ${process.version}; ${OPS} awaited decisions over ${KEYS.length} keys after as many to warm up ` +
          `(the 60 s sliding logs: at least ${LOG_WARM_DECISIONS}; the rows with a 1 s policy: ${WARM_MS} ms of a clock moving 1 ms per ${DECISIONS_PER_MS} decisions); ` +
          `each in a fresh process under callgrind; main-thread ${CACHE ? 'counts' : 'instructions'} per decision, median of ${ROUNDS} rounds\n`
      : `node ${process.version}; ${OPS} awaited decisions over ${KEYS.length} keys after as many, and at least ${WARM_MS} ms, to warm up; ` +
          `each in a fresh process; CPU ns per decision, median of ${ROUNDS} rounds\n`,
  )
  /**
   * The row ÷ `peer` in each round, lowest and highest: a round measures both within seconds, so
   * this is the spread a single comparison has on this machine, which the medians hide.
   */
  const roundRange = (name: string, peer: string) => {
    const own = samples.get(name) as number[][]
    const theirs = samples.get(peer) as number[][]
    const ratios = own.map((figures, round) => (figures[0] as number) / ((theirs[round] as number[])[0] as number))
    return [Math.min(...ratios), Math.max(...ratios)] as const
  }
  const titles = [
    MAIN.title,
    '× reference',
    '× reference, rounds',
    'vs express-rate-limit',
    'vs rate-limiter-flexible',
    'vs its pair',
  ]
  console.log(`| contender | ${[...titles, ...MISSES.map((column) => column.title)].join(' | ')} |`)
  console.log(`|---|${[...titles, ...MISSES].map(() => '---:').join('|')}|`)
  for (const name of NAMES) {
    const own = figure(name)
    const [low, high] = roundRange(name, CLOCK)
    const row = [
      name,
      own.toFixed(0),
      (own / figure(CLOCK)).toFixed(2),
      `${low.toFixed(2)}–${high.toFixed(2)}`,
      `${(figure(ERL) / own).toFixed(2)}×`,
      `${(figure(RLF) / own).toFixed(2)}×`,
      `${(figure(RLF_TWO) / own).toFixed(2)}×`,
      ...MISSES.map((_, i) => figure(name, i + 1).toFixed(1)),
    ]
    console.log(`| ${row.join(' | ')} |`)
  }
  console.log(
    `\n"× reference, rounds": this row ÷ the reference within each round, lowest–highest.` +
      `\n"vs" columns: the peer's ${INSTRUCTIONS ? 'count' : 'time'} ÷ this row's (above 1: this row is faster).`,
  )
  if (!INSTRUCTIONS) printBudget(figure, roundRange)
}

/**
 * The decision's time budget (issue 16), judged on the medians, with each goal's worst row and
 * its worst round beside it: a goal met in the medians but missed in some round is within this
 * machine's noise of its line.
 */
function printBudget(
  figure: (name: string) => number,
  roundRange: (name: string, peer: string) => readonly [number, number],
): void {
  const rows = NAMES.filter((name) => name.startsWith('sluice '))
  const log = (name: string) => name.includes('sliding-log')
  const goals = [
    {
      goal: 'one policy, but the sliding log: at most 1.5× the reference',
      peer: CLOCK,
      most: 1.5,
      rows: rows.filter((n) => !log(n) && n.includes('1 policy')),
    },
    {
      goal: 'two policies, but the sliding log: at most 2× the reference',
      peer: CLOCK,
      most: 2,
      rows: rows.filter((n) => !log(n) && n.includes('2 policies')),
    },
    { goal: 'the sliding log: at most 3× the reference', peer: CLOCK, most: 3, rows: rows.filter(log) },
    { goal: 'every row faster than rate-limiter-flexible with one limiter', peer: RLF, most: 1, rows },
    {
      goal: 'two policies faster than rate-limiter-flexible with the same two limits',
      peer: RLF_TWO,
      most: 1,
      rows: rows.filter((n) => n.includes('2 policies')),
    },
  ]
  console.log('\n| budget | worst row | its ratio (median) | its worst round | met |\n|---|---|---:|---:|---|')
  for (const { goal, peer, most, rows: judged } of goals) {
    const ratio = (name: string) => figure(name) / figure(peer)
    const worst = judged.reduce((a, b) => (ratio(b) > ratio(a) ? b : a))
    const [, high] = roundRange(worst, peer)
    const met = ratio(worst) <= most ? (high <= most ? 'yes' : 'yes, not in every round') : 'no'
    console.log(`| ${goal} | ${worst} | ${ratio(worst).toFixed(2)} | ${high.toFixed(2)} | ${met} |`)
  }
}
