import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { CountMinSketch, SharedCountMinSketch, SharedInflightCounter, SharedRateEstimator } from '@sluice/core'
import { afterEach, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import type { SharedWork } from './shared-worker.js'

const WORKER = fileURLToPath(new URL('./shared-worker.ts', import.meta.url))
const THREADS = 4
const running: Worker[] = []

afterEach(async () => {
  await Promise.all(running.splice(0).map((worker) => worker.terminate()))
})

/** `THREADS` worker threads that opened `buffer`; `run` sends each its work and resolves with every answer. */
async function threads(buffer: SharedArrayBuffer) {
  const path = await bundled(WORKER)
  const start = new Int32Array(new SharedArrayBuffer(4))
  const workers = Array.from(
    { length: THREADS },
    () => new Worker(path, { workerData: { buffer, start: start.buffer } }),
  )
  running.push(...workers)
  const answer = (worker: Worker, work: SharedWork) =>
    new Promise<unknown>((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
      worker.postMessage(work)
    })
  return {
    /** Sends each thread its work, then lets them all start together (so they contend). */
    run: (work: (thread: number) => SharedWork) => {
      const answers = Promise.all(workers.map((worker, i) => answer(worker, work(i))))
      Atomics.add(start, 0, 1)
      Atomics.notify(start, 0)
      return answers
    },
  }
}

/** Per thread, per key: thread t counts key i (1000 + 37·t·i) times; key 0 is hit by every thread alike. */
const countsOf = (thread: number, keys: number) =>
  Array.from({ length: keys }, (_, i) => (i === 0 ? 50_000 : 10_000 + 37 * thread * i))
const totalOf = (keys: number, key: number) =>
  Array.from({ length: THREADS }, (_, t) => countsOf(t, keys)[key] as number).reduce((a, b) => a + b, 0)

describe('shared-memory sketches across worker threads', () => {
  it('loses no increment: a shared count-min sketch reads exactly as one sketch fed every thread’s events', async () => {
    // Narrow on purpose: 40 keys on 2 × 16 counters collide, so every counter is contended.
    const shared = new SharedCountMinSketch({ hashes: 2, slots: 16, seed: 11 })
    const { run } = await threads(shared.buffer)
    await run((t) => ({ kind: 'count-min', counts: countsOf(t, 40) }))
    const alone = new CountMinSketch({ hashes: 2, slots: 16, seed: 11 })
    for (let t = 0; t < THREADS; t++) {
      for (const [i, n] of countsOf(t, 40).entries()) alone.incr(`k${i}`, n)
    }
    for (let i = 0; i < 40; i++) {
      expect(shared.estimate(`k${i}`)).toBe(alone.estimate(`k${i}`))
      expect(shared.estimate(`k${i}`)).toBeGreaterThanOrEqual(totalOf(40, i))
    }
  })

  it('counts exactly where the sketch is exact: a few keys in a wide sketch', async () => {
    const shared = new SharedCountMinSketch({ hashes: 4, slots: 1 << 16 })
    const { run } = await threads(shared.buffer)
    await run((t) => ({ kind: 'count-min', counts: countsOf(t, 5) }))
    for (let i = 0; i < 5; i++) expect(shared.estimate(`k${i}`)).toBe(totalOf(5, i))
  })

  it('keeps every count when all threads cross an interval boundary together', async () => {
    const start = 1_700_000_000_000
    const rate = new SharedRateEstimator({ interval: 1000, hashes: 4, slots: 4096 })
    const { run } = await threads(rate.buffer)
    const read = (at: number, key: number) =>
      SharedRateEstimator.from(rate.buffer, { now: () => at }).components(`k${key}`)

    await run((t) => ({ kind: 'rate', at: start + 100, counts: countsOf(t, 3) }))
    // Every thread enters the next interval at once: one of them clears the stale bank.
    await run((t) => ({ kind: 'rate', at: start + 1000, counts: countsOf(t, 3).map((n) => n * 2) }))
    for (let i = 0; i < 3; i++) {
      expect(read(start + 1500, i)).toEqual({
        previous: totalOf(3, i),
        current: 2 * totalOf(3, i),
        interval: 1000,
        fraction: 0.5,
      })
    }
    // Two intervals later both banks are stale: the new interval starts from nothing.
    await run((t) => ({ kind: 'rate', at: start + 3000, counts: countsOf(t, 3) }))
    expect(read(start + 3000, 1)).toMatchObject({ previous: 0, current: totalOf(3, 1) })
  })

  it('holds a concurrency limit across threads with a SharedInflightCounter, where per-thread counters admit it per thread', async () => {
    const counter = new SharedInflightCounter()
    const { run } = await threads(counter.buffer)
    const shared = (await run(() => ({ kind: 'concurrency', limit: 25, tries: 200, shared: true }))) as number[]
    expect(shared.reduce((a, b) => a + b, 0)).toBe(25)
    expect(counter.count('10.0.0.1')).toBe(25)
    await run(() => ({ kind: 'release' }))
    expect(counter.count('10.0.0.1')).toBe(0)

    const perThread = (await run(() => ({ kind: 'concurrency', limit: 25, tries: 200, shared: false }))) as number[]
    expect(perThread).toEqual([25, 25, 25, 25])
  })
})
