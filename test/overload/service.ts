// A service of fixed capacity in its own process: CAPACITY requests are worked on at once, each
// for WORK_MS; the rest wait their turn (so latency rises with the load), as a pool of database
// connections or workers would. `node service.js adaptive|none` puts adaptiveConcurrency in front,
// or nothing; it prints "ready <port>".
import type { AddressInfo } from 'node:net'
import { adaptiveConcurrency } from '@sluice/express'
import express from 'express'

export const CAPACITY = 8
export const WORK_MS = 40

let busy = 0
const waiting: (() => void)[] = []
/** How many were waiting inside the service when each request arrived, since the last /stats. */
let queueSeen: number[] = []
async function work(): Promise<void> {
  queueSeen.push(waiting.length)
  if (busy < CAPACITY) busy++
  else await new Promise<void>((resolve) => waiting.push(resolve))
  await new Promise((resolve) => setTimeout(resolve, WORK_MS))
  const next = waiting.shift()
  if (next) next()
  else busy--
}

const app = express()
// Time in this process, from arrival to the answer (the limiter's queue included): the client's
// own clock would add its event loop's delays on a loaded machine.
app.use((_req, res, next) => {
  res.locals.arrived = performance.now()
  next()
})
const limited = process.argv[2] === 'adaptive'
const limiter = adaptiveConcurrency({ max: 64 })
app.get('/stats', (_req, res) => {
  const sorted = queueSeen.sort((a, b) => a - b)
  queueSeen = []
  res.json({ ...limiter.limiter.stats(), medianQueue: sorted[Math.floor(sorted.length / 2)] ?? 0 })
})
if (limited) app.use(limiter)
app.get('/work', async (_req, res) => {
  await work()
  res.setHeader('x-server-ms', String(performance.now() - (res.locals.arrived as number)))
  res.json({ ok: true })
})
const server = app.listen(0, '127.0.0.1', () => {
  console.log(`ready ${(server.address() as AddressInfo).port}`)
})
