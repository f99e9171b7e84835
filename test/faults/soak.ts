// Steady load on an Express app with rateLimit for a while, checking that the heap (after GC) and
// the process's handles do not grow. Prints one JSON line.
//   pnpm soak [--seconds 60]        (the test runs it for a few seconds)
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { rateLimit } from '@sluice/express'
import express from 'express'

const args = process.argv.slice(2)
const at = args.indexOf('--seconds')
const seconds = at === -1 ? 60 : Number(args[at + 1])
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

const app = express()
app.use(rateLimit({ limits: ['10/s'], key: (req) => String(req.query.k ?? 'x'), validate: false }))
app.get('/', (_req, res) => {
  res.end('ok')
})
const server = app.listen(0, '127.0.0.1')
await once(server, 'listening')
const { port } = server.address() as AddressInfo
const agent = new Agent({ keepAlive: true, maxSockets: 8 })

let sent = 0
const statuses: Record<number, number> = {}
const one = () =>
  new Promise<void>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: `/?k=${sent++ % 50}`, agent }, (res) => {
      statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1
      res.resume()
      res.on('end', resolve)
    })
    req.on('error', () => resolve())
    req.end()
  })

const sample = () => {
  gc()
  return { heap: process.memoryUsage().heapUsed, handles: process.getActiveResourcesInfo().length }
}

const end = Date.now() + seconds * 1000
let first: ReturnType<typeof sample> | undefined
const warmUntil = Date.now() + (seconds * 1000) / 4
const loops = Array.from({ length: 8 }, async () => {
  while (Date.now() < end) await one()
})
while (Date.now() < end) {
  await new Promise((resolve) => setTimeout(resolve, 200))
  if (first === undefined && Date.now() >= warmUntil) first = sample()
}
await Promise.all(loops)
const last = sample()
agent.destroy()
server.close()
console.log(
  JSON.stringify({
    seconds,
    requests: sent,
    statuses,
    heapGrowthBytes: last.heap - (first?.heap ?? last.heap),
    handles: [first?.handles, last.handles],
  }),
)
