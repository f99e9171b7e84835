// A worker thread for shared-sketch.test.ts: opens the shared structure it is given and runs
// each command the test posts, answering with what it saw.
import { parentPort, workerData } from 'node:worker_threads'
import { SharedCountMinSketch, SharedInflightCounter, SharedRateEstimator } from '@sluice/core'
import { createConcurrencyHandler } from '@sluice/core/adapter'

export type SharedWork =
  /** incr `counts[i]` times key `k${i}`, interleaved. */
  | { kind: 'count-min'; counts: number[] }
  /** observe `counts[i]` times key `k${i}` with the clock at `at`. */
  | { kind: 'rate'; at: number; counts: number[] }
  /** `tries` requests for the client 10.0.0.1 through a concurrency limit of `limit`, none released. */
  | { kind: 'concurrency'; limit: number; tries: number; shared: boolean }
  /** release every request this thread was admitted. */
  | { kind: 'release' }

const { buffer, start } = workerData as { buffer: SharedArrayBuffer; start: SharedArrayBuffer }
/** Work number n starts when the test raises this word to n, in every thread at once. */
const round = new Int32Array(start)
let rounds = 0
const port = parentPort
if (port === null) throw new Error('run as a worker thread')

const clock = { at: 0 }
const adapter = { name: '@sluice/test', addressSource: 'ip', address: (ip: string) => ip, status: () => 200 }
const releases: (() => void)[] = []
let sketch: SharedCountMinSketch | undefined
let rate: SharedRateEstimator | undefined

/** Round-robin over the keys, so threads hit the same counters at the same moments. */
function interleave(counts: number[], step: (key: string) => void): void {
  const left = counts.slice()
  for (let busy = true; busy; ) {
    busy = false
    for (let i = 0; i < left.length; i++) {
      if ((left[i] as number) === 0) continue
      left[i] = (left[i] as number) - 1
      busy = true
      step(`k${i}`)
    }
  }
}

port.on('message', async (work: SharedWork) => {
  rounds++
  while (Atomics.load(round, 0) < rounds) Atomics.wait(round, 0, Atomics.load(round, 0), 100)
  if (work.kind === 'count-min') {
    sketch ??= SharedCountMinSketch.from(buffer)
    const s = sketch
    interleave(work.counts, (key) => s.incr(key))
    port.postMessage('done')
  } else if (work.kind === 'rate') {
    rate ??= SharedRateEstimator.from(buffer, { now: () => clock.at })
    const r = rate
    clock.at = work.at
    interleave(work.counts, (key) => r.observe(key))
    port.postMessage('done')
  } else if (work.kind === 'concurrency') {
    const handler = createConcurrencyHandler(
      { limit: work.limit, ...(work.shared && { counter: SharedInflightCounter.from(buffer) }) },
      adapter,
    )
    let admitted = 0
    for (let i = 0; i < work.tries; i++) {
      const plan = await handler.plan('10.0.0.1')
      if (plan.kind === 'continue') {
        admitted++
        releases.push(plan.release)
      }
    }
    port.postMessage(admitted)
  } else {
    for (const release of releases.splice(0)) release()
    port.postMessage('done')
  }
})
