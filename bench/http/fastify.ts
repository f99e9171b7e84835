// Fastify hello world for the HTTP benchmark, in its own process:
//   node --import tsx --conditions=source bench/http/fastify.ts <variant>
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { rateLimit } from '@sluice/fastify'
import Fastify, { type FastifyPluginAsync, type FastifyRequest } from 'fastify'
import {
  BODY,
  CLIENT_HEADER,
  CONSTANT_HEADERS,
  headersFor,
  isSluice,
  limitsFor,
  listening,
  variantArg,
} from './config.js'

// Loaded without its types: @fastify/rate-limit declares config.rateLimit and app.rateLimit on
// Fastify's types as @sluice/fastify does, and one program cannot hold both declarations.
const fastifyRateLimit = createRequire(import.meta.url)('@fastify/rate-limit') as FastifyPluginAsync<
  Record<string, unknown>
>

const variant = variantArg('fastify')
const app = Fastify()
const clientId = (request: FastifyRequest) => String(request.headers[CLIENT_HEADER] ?? '')
if (variant === 'noop') {
  app.addHook('onRequest', (_request, _reply, done) => done())
} else if (variant === 'headers') {
  // In lower case, as sluice hands them over: reply.header lower-cases every name, and these two
  // in mixed case cost the reference 14k instructions a request more (bench/README.md, issue 37).
  const headers = CONSTANT_HEADERS.map(([name, value]) => [name.toLowerCase(), value] as const)
  app.addHook('onRequest', (_request, reply, done) => {
    for (const [name, value] of headers) reply.header(name, value)
    done()
  })
} else if (isSluice(variant)) {
  await app.register(rateLimit, { limits: limitsFor(variant), headers: headersFor(variant), key: clientId })
} else if (variant === 'frl-1' || variant === 'frl-2') {
  // One window per registration, so one registration per policy; its three X-RateLimit-* headers
  // (its draft-spec mode sends the same three under other names).
  for (const { limit, window } of limitsFor(variant)) {
    await app.register(fastifyRateLimit, { max: limit, timeWindow: window, keyGenerator: clientId })
  }
}
app.get('/', (_request, reply) => {
  reply.type('text/plain').send(BODY)
})
await app.listen({ port: 0, host: '127.0.0.1' })
listening((app.server.address() as AddressInfo).port)
