declare const app: import('hono').Hono
declare const login: import('hono').Handler
declare const redis: import('ioredis').Redis
declare const meter: import('@opentelemetry/api').Meter
declare const rateLimit: typeof import('@sluice/hono').rateLimit
declare const concurrencyLimit: typeof import('@sluice/hono').concurrencyLimit
declare const admissionControl: typeof import('@sluice/hono').admissionControl
declare const ipKey: typeof import('@sluice/hono').ipKey
declare const createLimiter: typeof import('@sluice/core').createLimiter
declare const MemoryStore: typeof import('@sluice/core').MemoryStore
declare function bearerToken(c: import('hono').Context): string | undefined
declare function isPro(c: import('hono').Context): boolean
declare function apiKeyOf(c: import('hono').Context): string
