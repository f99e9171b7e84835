declare const app: import('koa')
declare const router: import('@koa/router').Router
declare const login: import('koa').Middleware
declare const redis: import('ioredis').Redis
declare const meter: import('@opentelemetry/api').Meter
declare const rateLimit: typeof import('@sluice/koa').rateLimit
declare const concurrencyLimit: typeof import('@sluice/koa').concurrencyLimit
declare const admissionControl: typeof import('@sluice/koa').admissionControl
declare const ipKey: typeof import('@sluice/koa').ipKey
declare const createLimiter: typeof import('@sluice/core').createLimiter
declare const MemoryStore: typeof import('@sluice/core').MemoryStore
declare function bearerToken(ctx: import('koa').Context): string | undefined
declare function isPro(ctx: import('koa').Context): boolean
declare function apiKeyOf(ctx: import('koa').Context): string
