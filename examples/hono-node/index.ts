import { serve } from '@hono/node-server'
import app from './app.js'

const port = Number(process.env.PORT ?? 3000)
const server = serve({ fetch: app.fetch, port }, (info) => {
  const url = `http://localhost:${info.port}`
  console.log(`sluice Hono (Node) example listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  for i in 1 2 3; do curl -s ${url}/slow & done; wait                   # the third concurrent call is 429`)
})
server.on('error', (error: NodeJS.ErrnoException) => failToListen(error, port))

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)))

/** A clear message instead of a stack trace when the port is taken (or not ours to use). */
function failToListen(error: NodeJS.ErrnoException, port: number): never {
  const reason =
    error.code === 'EADDRINUSE'
      ? `port ${port} is already in use (EADDRINUSE): stop the other server, or pick another port, e.g. PORT=${port + 1} pnpm start`
      : `cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port, e.g. PORT=3001 pnpm start`
  console.error(reason)
  process.exit(1)
}
