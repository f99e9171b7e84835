// Bundles worker.ts (or, with `durable`, durable-worker.ts and its Durable Object) the way
// Wrangler would (ESM, no Node built-ins) and serves it from workerd, the Workers runtime, through
// Miniflare: offline, no Cloudflare account needed.
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'

const durable = process.argv[2] === 'durable'

const bundle = await build({
  entryPoints: [fileURLToPath(new URL(durable ? './durable-worker.ts' : './worker.ts', import.meta.url))],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  conditions: ['source', 'workerd', 'worker', 'browser'],
  target: 'es2022',
})

const port = Number(process.env.PORT ?? 3000)
const mf = new Miniflare({
  modules: true,
  script: bundle.outputFiles[0]!.text,
  compatibilityDate: '2025-01-01',
  // Durable Object state is kept in memory here; `durableObjectsPersist: '.state'` would keep it on disk.
  ...(durable ? { durableObjects: { LIMITER: 'RateLimiterObject' } } : {}),
  host: '127.0.0.1',
  port,
})
const url = await mf.ready.then(
  (ready) => ready.origin,
  (error: NodeJS.ErrnoException) => failToListen(error, port),
)

console.log(durable ? durableHelp(url) : memoryHelp(url))

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void mf.dispose().then(() => process.exit(0))
  })
}

/** A clear message instead of a stack trace when the port is taken (or not ours to use). */
function failToListen(error: NodeJS.ErrnoException, port: number): never {
  const reason =
    error.code === 'EADDRINUSE'
      ? `port ${port} is already in use (EADDRINUSE): stop the other server, or pick another port, e.g. PORT=${port + 1} pnpm start`
      : `cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port, e.g. PORT=3001 pnpm start`
  console.error(reason)
  process.exit(1)
}

function memoryHelp(url: string): string {
  return `sluice Hono example running in workerd (Miniflare) on ${url}, memory store (per isolate)
Requests from this machine arrive with CF-Connecting-IP 127.0.0.1; send your own to act as another client.
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST -H 'CF-Connecting-IP: 203.0.113.7' ${url}/login      # another client, its own quota
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`
}

function durableHelp(url: string): string {
  return `sluice Hono example running in workerd (Miniflare) on ${url}, Durable Object store (global limits)
Every decision is made by the client key's RateLimiterObject, whichever isolate serves the request.
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute`
}
