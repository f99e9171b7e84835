import { serve } from '@hono/node-server'
import { MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { createGateway } from './app.js'

// Memory by default; REDIS_URL=redis://127.0.0.1:6379 puts both limits in Redis.
const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined
const store: Store = redis
  ? new RedisStore({ client: redis, prefix: process.env.PREFIX ?? 'ai-gateway:' })
  : new MemoryStore()
const port = Number(process.env.PORT ?? 3000)

const server = serve({ fetch: createGateway(store).fetch, port }, (info) => {
  const url = `http://localhost:${info.port}`
  console.log(`sluice AI gateway example (${redis ? 'Redis' : 'memory'} store) listening on ${url}
Try:
  curl -s -H 'Authorization: Bearer key-1' -d '{"prompt":"hello, answer in 100 tokens","max_tokens":500}' ${url}/v1/completions
  curl -s -H 'Authorization: Bearer key-1' ${url}/v1/usage
  curl -s -H 'Authorization: Bearer key-1' -d '{"plan":"pro"}' ${url}/v1/plan`)
})
server.on('error', (error: NodeJS.ErrnoException) => {
  console.error(`cannot listen on port ${port} (${error.code ?? error.message}): set PORT to a free port`)
  process.exit(1)
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => (redis ? redis.quit().then(() => process.exit(0)) : process.exit(0))))
}
