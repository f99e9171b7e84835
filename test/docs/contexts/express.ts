declare const app: import('express').Express
declare const login: import('express').RequestHandler
declare const redis: import('ioredis').Redis
declare const meter: import('@opentelemetry/api').Meter
declare const rateLimit: typeof import('@sluice/express').rateLimit
declare const concurrencyLimit: typeof import('@sluice/express').concurrencyLimit
declare const admissionControl: typeof import('@sluice/express').admissionControl
declare const ipKey: typeof import('@sluice/express').ipKey
declare const createLimiter: typeof import('@sluice/core').createLimiter
declare const MemoryStore: typeof import('@sluice/core').MemoryStore
declare const RedisStore: typeof import('@sluice/redis').RedisStore
declare function bearerToken(req: import('express').Request): string | undefined
declare function isPro(req: import('express').Request, res: import('express').Response): boolean
declare function apiKeyOf(req: import('express').Request, res: import('express').Response): string
