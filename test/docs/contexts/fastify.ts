declare const app: import('fastify').FastifyInstance
declare const redis: import('ioredis').Redis
declare const rateLimit: typeof import('@sluice/fastify').rateLimit
declare const concurrencyLimit: typeof import('@sluice/fastify').concurrencyLimit
declare const admissionControl: typeof import('@sluice/fastify').admissionControl
declare const createLimiter: typeof import('@sluice/core').createLimiter
declare const MemoryStore: typeof import('@sluice/core').MemoryStore
declare const RedisStore: typeof import('@sluice/redis').RedisStore
declare function isPro(request: import('fastify').FastifyRequest): boolean
declare function apiKeyOf(request: import('fastify').FastifyRequest): string
declare const adaptiveConcurrency: typeof import('@sluice/fastify').adaptiveConcurrency
