/**
 * Starts two app processes on two ports, sends 16 requests alternating between them (a few per
 * second, so the 3/s limit does not bind) and prints who answered what. Expect exactly 10
 * admitted in total: the minute's limit is shared through Redis, not kept per process.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const APP = fileURLToPath(new URL('./app.ts', import.meta.url))
const PORTS = [Number(process.env.PORT_A ?? 3101), Number(process.env.PORT_B ?? 3102)]
const prefix = `sluice-example:${Date.now()}:`

function start(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', APP], {
    env: { ...process.env, PORT: String(port), PREFIX: prefix },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`app on ${port} exited with ${code}`)))
    child.stdout?.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk)
      if (chunk.toString().includes('listening')) resolve(child)
    })
  })
}

const apps = await Promise.all(PORTS.map(start))
try {
  let admitted = 0
  for (let i = 0; i < 16; i++) {
    const port = PORTS[i % 2]
    const response = await fetch(`http://127.0.0.1:${port}/`)
    const body = (await response.json()) as { source?: string; detail?: string }
    if (response.status === 200) admitted++
    const note = response.status === 200 ? `decided by ${body.source}` : body.detail
    console.log(`#${i + 1} :${port} -> ${response.status} RateLimit: ${response.headers.get('ratelimit')}  ${note}`)
    await new Promise((r) => setTimeout(r, 400))
  }
  console.log(`admitted ${admitted} of 16 across two processes (the limit is 10/min)`)
} finally {
  for (const app of apps) app.kill('SIGTERM')
}
