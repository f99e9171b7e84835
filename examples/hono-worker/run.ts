// Bundles worker.ts the way Wrangler would (ESM, no Node built-ins) and serves it from workerd,
// the Workers runtime, through Miniflare: offline, no Cloudflare account needed.
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'

const bundle = await build({
  entryPoints: [fileURLToPath(new URL('./worker.ts', import.meta.url))],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'neutral',
  mainFields: ['module', 'main'],
  conditions: ['source', 'workerd', 'worker', 'browser'],
  target: 'es2022',
})

const mf = new Miniflare({
  modules: true,
  script: bundle.outputFiles[0]!.text,
  compatibilityDate: '2025-01-01',
  host: '127.0.0.1',
  port: Number(process.env.PORT ?? 3000),
})
const url = (await mf.ready).origin

console.log(`sluice Hono example running in workerd (Miniflare) on ${url}
Requests from this machine arrive with CF-Connecting-IP 127.0.0.1; send your own to act as another client.
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST -H 'CF-Connecting-IP: 203.0.113.7' ${url}/login      # another client, its own quota
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void mf.dispose().then(() => process.exit(0))
  })
}
