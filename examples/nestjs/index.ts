import type { AddressInfo } from 'node:net'
import { Controller, Get, HttpCode, type INestApplication, Module, Post, Query, Req, Res } from '@nestjs/common'
import { APP_GUARD, NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { MemoryStore } from '@sluice/core'
import { type Decision, RateLimit, RateLimitGuard, SkipRateLimit, SluiceModule } from '@sluice/nestjs'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'

/** Items one `/api/items` call may ask for; each item costs one unit of the API quota. */
const MAX_ITEMS = 50

/** `?items=N` as a whole number from 1 to MAX_ITEMS (anything else counts as 1). */
function itemsOf(value: unknown): number {
  const n = Number(value)
  return Number.isSafeInteger(n) ? Math.min(Math.max(n, 1), MAX_ITEMS) : 1
}

/** The demo account (user `demo`, password `sluice`), sent as HTTP Basic auth; a real app checks a password hash. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

interface HttpRequest {
  headers: Record<string, string | undefined>
  query: Record<string, unknown>
  /** The guard's decision (requestPropertyName, default 'rateLimit'). */
  rateLimit?: Decision
}

/** An Express response or a Fastify reply: both answer a status this way or the other. */
interface HttpResponse {
  status?(code: number): unknown
  code?(code: number): unknown
}

@Controller()
class AppController {
  @SkipRateLimit()
  @Get()
  index() {
    return { hello: 'world', routes: ['POST /login', 'GET /api/items?items=N', 'GET /api/profile'] }
  }

  // Brute-force protection: 5 failed attempts a minute and at most 1 a second, per client IP. A
  // successful login is given back once answered (skipSuccessfulRequests), so only failures count.
  @RateLimit({
    limits: ['5/min', { limit: 1, window: '1s', algorithm: 'gcra' }],
    skipSuccessfulRequests: true,
    namespace: 'login',
  })
  @HttpCode(200)
  @Post('login')
  login(@Req() req: HttpRequest, @Res({ passthrough: true }) res: HttpResponse) {
    if (req.headers.authorization !== DEMO_LOGIN) {
      if (res.code) res.code(401)
      else res.status?.(401)
      return { ok: false, failedAttemptsLeftThisMinute: req.rateLimit?.policies[0]?.remaining }
    }
    return { ok: true }
  }

  // A quota of 200 items a minute per client: `?items=20` takes 20 units, `?items=1` takes one.
  @RateLimit({
    limits: [{ limit: 200, window: '1m', algorithm: 'token-bucket', name: 'items' }],
    cost: (context) => itemsOf(context.switchToHttp().getRequest<HttpRequest>().query.items),
  })
  @Get('api/items')
  items(@Query('items') items: string, @Req() req: HttpRequest) {
    const count = itemsOf(items)
    return { items: Array.from({ length: count }, (_, i) => ({ id: i + 1 })), quotaLeft: req.rateLimit?.remaining }
  }

  // No decorator: the module's limit, 100 a minute per client across every such route.
  @Get('api/profile')
  profile() {
    return { name: 'demo' }
  }
}

// With REDIS_URL the counts live in Redis, shared by every process of the app; else in this one.
const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL) : undefined
const store = redis ? new RedisStore({ client: redis }) : new MemoryStore({ maxKeys: 50_000 })

@Module({
  imports: [SluiceModule.forRoot({ limits: '100/min', store })],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
class AppModule {}

// PLATFORM=fastify runs the same app on Nest's Fastify platform. Behind a reverse proxy, give the
// platform its proxies (Express: app.set('trust proxy', 1); Fastify: new FastifyAdapter({ trustProxy: 'proxy address' })).
const platform = process.env.PLATFORM === 'fastify' ? 'fastify' : 'express'
const app: INestApplication = await NestFactory.create(
  AppModule,
  platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter(),
  { logger: ['error', 'warn'] },
)
const port = Number(process.env.PORT ?? 3000)
try {
  await app.listen(port)
} catch (error) {
  failToListen(error as NodeJS.ErrnoException, port)
}
const url = `http://localhost:${(app.getHttpServer().address() as AddressInfo).port}`
console.log(`sluice NestJS example (${platform} platform, ${redis ? 'Redis' : 'memory'} store) listening on ${url}
Try:
  curl -i ${url}/
  for i in 1 2 3; do curl -si -X POST -u demo:sluice ${url}/login | head -n 1; done   # 200s: successes don't count
  for i in 1 2 3; do curl -si -X POST ${url}/login | head -n 1; done   # 401, then 429 within the second
  curl -i -X POST ${url}/login                                          # RateLimit and RateLimit-Policy headers
  curl -i '${url}/api/items?items=40'                                   # takes 40 of 200 units a minute
  curl -i ${url}/api/profile                                            # the module's 100 a minute`)

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    app.getHttpServer().closeAllConnections?.()
    void app
      .close()
      .then(() => redis?.quit())
      .then(() => process.exit(0))
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
