import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import type { ObserveEvent } from '@sluice/core'
import { rateLimit } from '@sluice/express'
import { metrics } from '@sluice/opentelemetry'
import express from 'express'
import { liveFeed } from './live.js'

// Prometheus scrapes /metrics on the app's own port (no second server).
const exporter = new PrometheusExporter({ preventServerStart: true })
const provider = new MeterProvider({ readers: [exporter] })
const recordMetrics = metrics({ meter: provider.getMeter('sluice-example') })
const live = liveFeed()
/** One observe for every limiter: metrics for Prometheus, and the live page's per-second counts. */
const observe = (event: ObserveEvent) => {
  recordMetrics(event)
  live.observe(event)
}

const app = express()
app.get('/metrics', (req, res) => exporter.getMetricsRequestHandler(req, res))

const page = readFileSync(new URL('./live.html', import.meta.url), 'utf8')
app.get('/', (_req, res) => {
  res.type('html').send(page)
})
// Server-sent events: one message per second with that second's decisions by policy.
app.get('/live', (req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
  res.write(': connected\n\n')
  const stop = live.listen((second) => res.write(`data: ${JSON.stringify(second)}\n\n`))
  req.on('close', stop)
})

app.get('/api', rateLimit({ limits: [{ limit: 5, window: '1s', name: 'api' }], observe }), (_req, res) => {
  res.json({ ok: true })
})
app.get('/search', rateLimit({ limits: [{ limit: 2, window: '1s', name: 'search' }], observe }), (_req, res) => {
  res.json({ results: [] })
})

const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  const { port } = server.address() as AddressInfo
  console.log(`observability example listening on http://localhost:${port} (metrics at /metrics)`)
})

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => server.close(() => process.exit(0)).closeAllConnections())
