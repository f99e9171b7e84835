import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import { CAPACITY, WORK_MS } from './service.js'

/**
 * Real processes: a service that can work on CAPACITY requests at once (WORK_MS each) is offered
 * eight times that by closed-loop clients, once bare and once behind adaptiveConcurrency; then the
 * load drops below capacity. Assertions compare the two runs (this machine is shared and slow,
 * so absolute latencies are not a test's business): bare, every request queues; limited, the
 * excess is refused at once with 503 and what is admitted stays fast; afterwards everything passes.
 */
const SERVICE = fileURLToPath(new URL('./service.ts', import.meta.url))
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill()
})

async function start(mode: 'adaptive' | 'none'): Promise<string> {
  const child = spawn(process.execPath, [await bundled(SERVICE), mode], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (data: Buffer) => {
      const port = /ready (\d+)/.exec(data.toString())?.[1]
      if (port) resolve(`http://127.0.0.1:${port}`)
    })
    child.on('exit', (code) => reject(new Error(`service exited (${code})`)))
  })
}

interface Result {
  status: number
  /** Client-side round trip. */
  ms: number
  /** Server-side, arrival to answer (admitted requests only). */
  serverMs: number
  retryAfter: string | null
}

/**
 * `clients` loops, each sending its next request when the last is answered, for `ms`; after a
 * refusal a client pauses for one request's work before trying again (without a pause, clients
 * refused in a millisecond spin and the load generator itself takes the machine's CPU).
 */
async function load(url: string, clients: number, ms: number): Promise<Result[]> {
  const results: Result[] = []
  const until = Date.now() + ms
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const started = performance.now()
        const response = await fetch(`${url}/work`)
        await response.arrayBuffer()
        results.push({
          status: response.status,
          ms: performance.now() - started,
          serverMs: Number(response.headers.get('x-server-ms')),
          retryAfter: response.headers.get('retry-after'),
        })
        if (response.status !== 200) await new Promise((resolve) => setTimeout(resolve, WORK_MS))
      }
    }),
  )
  return results
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

describe('adaptiveConcurrency in front of a service of fixed capacity, in real processes', () => {
  it('overloaded, it refuses the excess at once and keeps admitted requests fast; afterwards it serves everything', async () => {
    const [bare, limited] = await Promise.all([start('none'), start('adaptive')])
    // Warm both up below capacity (the adaptive one measures its no-load latency here).
    await Promise.all([load(bare, 2, 500), load(limited, 2, 500)])

    const stats = async (url: string) =>
      (await (await fetch(`${url}/stats`)).json()) as { limit: number; medianQueue: number }
    await Promise.all([stats(bare), stats(limited)])
    const overloadBare = await load(bare, CAPACITY * 8, 2500)
    const bareStats = await stats(bare)
    const overloadLimited = await load(limited, CAPACITY * 8, 2500)
    const limitedStats = await stats(limited)
    const admitted = overloadLimited.filter((r) => r.status === 200)
    const refused = overloadLimited.filter((r) => r.status !== 200)

    // Bare: nothing refused, every request waits behind the others in the service's queue: more
    // than its capacity again waiting (the clients keep 8× capacity in flight on an idle machine;
    // a loaded one keeps fewer, which the comparisons below measure against).
    expect(overloadBare.every((r) => r.status === 200)).toBe(true)
    expect(bareStats.medianQueue).toBeGreaterThan(CAPACITY)
    const bareMedian = median(overloadBare.map((r) => r.ms))
    // Limited: the excess refused with 503 and Retry-After, quickly; the service's own queue at
    // most half as long, the admitted served faster (timed in the service's process), and at
    // least half as many per second (the clients pause after each refusal).
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((r) => r.status === 503 && r.retryAfter === '1')).toBe(true)
    expect(limitedStats.medianQueue).toBeLessThan(bareStats.medianQueue / 2)
    expect(median(admitted.map((r) => r.serverMs))).toBeLessThan(median(overloadBare.map((r) => r.serverMs)))

    expect(median(refused.map((r) => r.ms))).toBeLessThan(bareMedian * 0.6)
    expect(admitted.length).toBeGreaterThan(overloadBare.length * 0.5)
    expect(limitedStats.limit).toBeLessThan(CAPACITY * 4)

    // Recovered: below capacity again, everything is served.
    const after = await load(limited, Math.floor(CAPACITY / 2), 1000)
    expect(after.length).toBeGreaterThan(10)
    expect(after.every((r) => r.status === 200)).toBe(true)
  }, 30_000)
})
