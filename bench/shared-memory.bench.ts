/**
 * Counting shared by worker threads (issue 42, seed 000's eight-thread figure): wall-clock ns per
 * event when T = 1, 2, 4 and 8 threads count one stream of events between them, for
 *  - SharedCountMinSketch (one sketch in a SharedArrayBuffer, Atomics.add): one shared count;
 *  - a Map behind message passing (the main thread owns the Map, each thread posts each key to it,
 *    or batches of 256 keys): one shared count, one message per event or per batch;
 *  - per-thread structures, nothing shared (a Map each, a CountMinSketch each: what an app on
 *    worker_threads has today, T counts instead of one), for scale.
 * Each thread counts EVENTS / T uniform picks from its own KEYS keys (client-address-like strings,
 * generated before timing). Threads start together on a shared word; the time is from that start
 * until the last event is counted (by the owner, for messages). Median of ROUNDS.
 *
 *   pnpm bench:shared-memory [--events 2000000] [--keys 100000] [--rounds 3] [--threads 1,2,4,8]
 */
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { CountMinSketch, SharedCountMinSketch } from '@sluice/core'
import { bundled } from '../test/support/bundle.js'

type Contender = 'shared sketch' | 'Map, messages' | 'Map, messages ×256' | 'Map per thread' | 'sketch per thread'
const CONTENDERS: Contender[] = [
  'shared sketch',
  'Map, messages',
  'Map, messages ×256',
  'Map per thread',
  'sketch per thread',
]
const BATCH = 256

interface Job {
  contender: Contender
  events: number
  keys: number
  seed: number
  sketch: SharedArrayBuffer
  start: SharedArrayBuffer
}

/** Client-address-like keys, flat strings (as sketch.bench.ts). */
function makeKeys(count: number, salt: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const x = (Math.imul(i, 0x9e3779b1) ^ salt) >>> 0
    return [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255].join('.')
  })
}

function stream(events: number, keys: number, seed: number): Uint32Array {
  const out = new Uint32Array(events)
  let state = seed | 1
  for (let i = 0; i < events; i++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    out[i] = (state >>> 0) % keys
  }
  return out
}

if (!isMainThread) {
  const job = workerData as Job
  const port = parentPort
  if (port === null) throw new Error('worker without a port')
  const keys = makeKeys(job.keys, job.seed)
  const picks = stream(job.events, job.keys, job.seed)
  const start = new Int32Array(job.start)
  const shared = SharedCountMinSketch.from(job.sketch)
  const local = new CountMinSketch({ hashes: shared.hashes, slots: shared.slots })
  const map = new Map<string, number>()
  const run = (contender: Contender, from: number, to: number) => {
    if (contender === 'shared sketch') for (let i = from; i < to; i++) shared.incr(keys[picks[i] as number] as string)
    else if (contender === 'sketch per thread')
      for (let i = from; i < to; i++) local.incr(keys[picks[i] as number] as string)
    else if (contender === 'Map per thread') {
      for (let i = from; i < to; i++) {
        const key = keys[picks[i] as number] as string
        map.set(key, (map.get(key) ?? 0) + 1)
      }
    } else if (contender === 'Map, messages') for (let i = from; i < to; i++) port.postMessage(keys[picks[i] as number])
    else {
      for (let i = from; i < to; i += BATCH) {
        const batch: string[] = []
        for (let j = i; j < Math.min(to, i + BATCH); j++) batch.push(keys[picks[j] as number] as string)
        port.postMessage(batch)
      }
    }
  }
  // Warm up in-thread contenders (JIT) on the first tenth, then wait for the common start.
  if (!job.contender.startsWith('Map, messages')) run(job.contender, 0, Math.floor(job.events / 10))
  map.clear()
  local.reset()
  port.postMessage('ready')
  while (Atomics.load(start, 0) === 0) Atomics.wait(start, 0, 0, 50)
  run(job.contender, 0, job.events)
  port.postMessage('done')
} else {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string) => {
    const index = args.indexOf(`--${name}`)
    return index === -1 ? fallback : (args[index + 1] as string)
  }
  const EVENTS = Number(option('events', '2000000'))
  const KEYS = Number(option('keys', '100000'))
  const ROUNDS = Number(option('rounds', '3'))
  const THREADS = option('threads', '1,2,4,8').split(',').map(Number)
  // Workers run this file bundled (Node 20 does not hand tsx's loader to worker threads).
  const workerPath = await bundled(fileURLToPath(import.meta.url))

  /** One timed run: T threads share EVENTS events; ns of wall time per event. */
  async function once(contender: Contender, threads: number, round: number): Promise<number> {
    const sketch = new SharedCountMinSketch({ hashes: 3, slots: 1024 })
    const start = new Int32Array(new SharedArrayBuffer(4))
    const owner = new Map<string, number>()
    let counted = 0
    const events = Math.floor(EVENTS / threads)
    let began = 0n
    let allCounted: () => void = () => {}
    const finished = new Promise<void>((resolve) => {
      allCounted = resolve
    })
    let done = 0
    let ready = 0
    let allReady: () => void = () => {}
    const readied = new Promise<void>((resolve) => {
      allReady = resolve
    })
    const check = () => {
      if (done === threads && (!contender.startsWith('Map, messages') || counted === events * threads)) allCounted()
    }
    const workers = Array.from({ length: threads }, (_, t) => {
      const job: Job = {
        contender,
        events,
        keys: KEYS,
        seed: 0x2545f491 + 977 * t + 7919 * round,
        sketch: sketch.buffer,
        start: start.buffer,
      }
      const worker = new Worker(workerPath, { workerData: job })
      worker.on('message', (message: unknown) => {
        if (message === 'ready') {
          if (++ready === threads) allReady()
        } else if (message === 'done') {
          done++
          check()
        } else if (typeof message === 'string') {
          owner.set(message, (owner.get(message) ?? 0) + 1)
          counted++
          if (counted === events * threads) check()
        } else {
          for (const key of message as string[]) owner.set(key, (owner.get(key) ?? 0) + 1)
          counted += (message as string[]).length
          if (counted === events * threads) check()
        }
      })
      return worker
    })
    await readied
    began = process.hrtime.bigint()
    Atomics.store(start, 0, 1)
    Atomics.notify(start, 0)
    await finished
    const ns = Number(process.hrtime.bigint() - began) / (events * threads)
    await Promise.all(workers.map((worker) => worker.terminate()))
    return ns
  }

  const median = (values: number[]) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  console.log(
    `# shared-memory bench: ${EVENTS} events over ${KEYS} keys per thread, median of ${ROUNDS}; ` +
      `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), Node ${process.version}; ` +
      'more threads than cores share the cores, and other jobs share this machine',
  )
  const table: Record<string, Record<number, number>> = {}
  for (const threads of THREADS) {
    const rounds: Record<string, number[]> = {}
    // Interleaved: round r runs every contender before round r + 1, so drift in load hits all alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const contender of CONTENDERS) {
        const ns = await once(contender, threads, round)
        rounds[contender] = [...(rounds[contender] ?? []), ns]
      }
    }
    for (const contender of CONTENDERS) {
      table[contender] = { ...table[contender], [threads]: median(rounds[contender] as number[]) }
    }
  }
  console.log(`| ns per event (wall) | ${THREADS.map((t) => `${t} thread${t === 1 ? '' : 's'}`).join(' | ')} |`)
  console.log(`|---|${THREADS.map(() => '---:').join('|')}|`)
  for (const contender of CONTENDERS) {
    const row = table[contender] as Record<number, number>
    console.log(`| ${contender} | ${THREADS.map((t) => (row[t] as number).toFixed(1)).join(' | ')} |`)
  }
  const shared = table['shared sketch'] as Record<number, number>
  for (const other of ['Map, messages', 'Map, messages ×256'] as const) {
    const row = table[other] as Record<number, number>
    console.log(
      `shared sketch vs ${other}: ${THREADS.map((t) => `${t}: ×${((row[t] as number) / (shared[t] as number)).toFixed(2)}`).join(', ')}`,
    )
  }
}
