import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common'
import { APP_FILTER, APP_GUARD } from '@nestjs/core'
import { ConfigError, QUOTA_EXCEEDED } from '@sluice/core'
import { RateLimit, RateLimitException, RateLimitGuard, SkipRateLimit, SluiceModule } from '@sluice/nestjs'
import { describe, expect, it } from 'vitest'
import { clockedStore } from '../support/clock.js'
import { get, platforms, start, statuses } from './app.js'

const fixed = (limit: number, name?: string) => ({ limit, window: '1m', algorithm: 'fixed-window' as const, name })
const remaining = (header: string | undefined) => Number(/;r=(\d+)/.exec(header ?? '')?.[1])

describe.each(platforms)('@sluice/nestjs on %s', (platform) => {
  it("a handler's @RateLimit overrides its controller's, which overrides the module's; a count belongs where its limits are declared", async () => {
    const { store } = clockedStore()
    @RateLimit({ limits: fixed(4) })
    @Controller('users')
    class Users {
      @Get('list')
      list() {
        return 'list'
      }
      // Only the cost: counts in the controller's 4/min.
      @RateLimit({ cost: 2 })
      @Get('export')
      export() {
        return 'export'
      }
      // Its own limits: a count of its own.
      @RateLimit({ limits: fixed(1) })
      @Get('login')
      login() {
        return 'login'
      }
      @SkipRateLimit()
      @Get('health')
      health() {
        return 'ok'
      }
    }
    @Controller('other')
    class Other {
      @Get()
      other() {
        return 'other'
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ limits: fixed(10), store })],
      controllers: [Users, Other],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AppModule {}
    const app = await start(AppModule, platform)
    try {
      expect(remaining((await get(app, '/users/list')).headers.ratelimit)).toBe(3)
      expect(remaining((await get(app, '/users/export')).headers.ratelimit)).toBe(1)
      expect((await get(app, '/users/export')).status).toBe(429)
      expect(remaining((await get(app, '/users/list')).headers.ratelimit)).toBe(0)
      expect(await statuses(app, '/users/login', 2)).toEqual([200, 429])
      const health = await get(app, '/users/health')
      expect(health.status).toBe(200)
      expect(health.headers.ratelimit).toBeUndefined()
      // The module's limit counts the undecorated routes of other controllers, nothing of Users.
      expect(remaining((await get(app, '/other')).headers.ratelimit)).toBe(9)
    } finally {
      await app.close()
    }
  })

  it('a skipped controller leaves its handlers unlimited, except a handler with its own @RateLimit', async () => {
    @SkipRateLimit()
    @Controller()
    class Internal {
      @Get('free')
      free() {
        return 'free'
      }
      @RateLimit({ limits: '1/min' })
      @Get('limited')
      limited() {
        return 'limited'
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ limits: '1/min' })],
      controllers: [Internal],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AppModule {}
    const app = await start(AppModule, platform)
    try {
      expect(await statuses(app, '/free', 3)).toEqual([200, 200, 200])
      expect(await statuses(app, '/limited', 2)).toEqual([200, 429])
    } finally {
      await app.close()
    }
  })

  it('several named limits are one all-or-nothing set: a denial by one charges none of the others', async () => {
    const { store } = clockedStore()
    @Controller()
    class Api {
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({
      imports: [
        SluiceModule.forRoot({
          limits: [
            { name: 'short', limit: 2, window: '1s', algorithm: 'fixed-window' },
            { name: 'long', limit: 5, window: '1m', algorithm: 'fixed-window' },
          ],
          store,
        }),
      ],
      controllers: [Api],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AppModule {}
    const app = await start(AppModule, platform)
    try {
      await get(app, '/')
      await get(app, '/')
      const denied = await get(app, '/')
      expect(denied.status).toBe(429)
      expect(denied.body).toMatchObject({ 'violated-policies': ['short'] })
      // long is still at 3: the denied request took nothing from it.
      expect(denied.headers.ratelimit).toBe('"short";r=0;t=1, "long";r=3;t=60')
    } finally {
      await app.close()
    }
  })

  it('key, cost and skip receive the ExecutionContext: its request, handler and class', async () => {
    const seen: string[] = []
    @Controller()
    class Api {
      @Get('a')
      a() {
        return 'a'
      }
    }
    const user = (context: ExecutionContext) =>
      context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-user'] ?? 'anon'
    @Module({
      imports: [
        SluiceModule.forRoot({
          limits: fixed(3),
          key: (context) => {
            seen.push(`${context.getClass().name}.${context.getHandler().name}:${context.getType()}`)
            return user(context)
          },
          cost: (context) => (user(context) === 'heavy' ? 3 : 1),
          skip: (context) => user(context) === 'admin',
        }),
      ],
      controllers: [Api],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AppModule {}
    const app = await start(AppModule, platform)
    try {
      expect(await statuses(app, '/a', 2, { 'x-user': 'heavy' })).toEqual([200, 429])
      expect(await statuses(app, '/a', 4, { 'x-user': 'ann' })).toEqual([200, 200, 200, 429])
      expect(await statuses(app, '/a', 4, { 'x-user': 'admin' })).toEqual([200, 200, 200, 200])
      expect(seen[0]).toBe('Api.a:http')
    } finally {
      await app.close()
    }
  })

  it("the denial is a RateLimitException: Nest's default filter answers the problem details, a filter of one's own sees the decision and headers", async () => {
    @Controller()
    class Api {
      @Get('plain')
      plain() {
        return 'ok'
      }
      @RateLimit({ limits: '1/min', message: 'Slow down' })
      @Get('text')
      text() {
        return 'ok'
      }
    }
    const caught: RateLimitException[] = []
    @Catch(RateLimitException)
    class Filter implements ExceptionFilter {
      catch(exception: RateLimitException, host: ArgumentsHost) {
        caught.push(exception)
        const response = host.switchToHttp().getResponse()
        const body = { error: 'slow down', retryAfter: exception.retryAfter }
        // Express: status().json(); Fastify: code().send().
        if (typeof response.code === 'function') response.code(exception.getStatus()).send(body)
        else response.status(exception.getStatus()).json(body)
      }
    }
    const withFilter = async (filter: boolean) => {
      @Module({
        imports: [SluiceModule.forRoot({ limits: '1/min' })],
        controllers: [Api],
        providers: [
          { provide: APP_GUARD, useClass: RateLimitGuard },
          ...(filter ? [{ provide: APP_FILTER, useClass: Filter }] : []),
        ],
      })
      class AppModule {}
      return start(AppModule, platform)
    }
    const plain = await withFilter(false)
    try {
      await get(plain, '/plain')
      const denied = await get(plain, '/plain')
      expect(denied.status).toBe(429)
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(denied.headers['retry-after']).toBe(String(denied.headers['retry-after']))
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0)
      expect(denied.body).toMatchObject({ type: QUOTA_EXCEEDED, status: 429, title: 'Too Many Requests' })
      // A string message is Nest's message field, as for any HttpException built from a string.
      await get(plain, '/text')
      const text = await get(plain, '/text')
      expect(text.status).toBe(429)
      expect(text.body).toEqual({ statusCode: 429, message: 'Slow down' })
      expect(text.headers['retry-after']).toBeDefined()
    } finally {
      await plain.close()
    }
    const filtered = await withFilter(true)
    try {
      await get(filtered, '/plain')
      const denied = await get(filtered, '/plain')
      expect(denied.status).toBe(429)
      expect(caught).toHaveLength(1)
      const exception = caught[0] as RateLimitException
      expect(exception).toBeInstanceOf(RateLimitException)
      expect(exception.decision).toMatchObject({ allowed: false, limit: 1, remaining: 0 })
      expect(exception.headers.RateLimit).toBe(denied.headers.ratelimit)
      expect(denied.body).toEqual({ error: 'slow down', retryAfter: Number(denied.headers['retry-after']) })
    } finally {
      await filtered.close()
    }
  })

  it('@UseGuards(RateLimitGuard) limits one controller; forRootAsync takes options from a factory with injections', async () => {
    const LIMITS = Symbol('limits')
    @Controller('guarded')
    @UseGuards(RateLimitGuard)
    class Guarded {
      @Get()
      index() {
        return 'ok'
      }
    }
    @Controller('open')
    class Open {
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({ providers: [{ provide: LIMITS, useValue: '2/min' }], exports: [LIMITS] })
    class ConfigModule {}
    @Module({
      imports: [
        SluiceModule.forRootAsync({
          imports: [ConfigModule],
          inject: [LIMITS],
          useFactory: async (limits: string) => ({ limits }),
        }),
      ],
      controllers: [Guarded, Open],
    })
    class AppModule {}
    const app = await start(AppModule, platform)
    try {
      expect(await statuses(app, '/guarded', 3)).toEqual([200, 200, 429])
      expect(await statuses(app, '/open', 3)).toEqual([200, 200, 200])
    } finally {
      await app.close()
    }
  })
})

describe('@sluice/nestjs bad input: a ConfigError when the app starts, never per request', () => {
  it('a decorator on a property, an accessor or a parameter throws where it is written', () => {
    const decorate = (apply: () => void) => {
      try {
        apply()
      } catch (error) {
        return error
      }
    }
    class Target {
      value = 1
      get computed() {
        return 1
      }
    }
    const onProperty = decorate(() => RateLimit({ limits: '1/s' })(Target.prototype, 'value'))
    expect(onProperty).toBeInstanceOf(ConfigError)
    expect((onProperty as Error).message).toBe(
      '@RateLimit() goes on a controller class or one of its handler methods, not on a property, got "Target.value"',
    )
    const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'computed')
    expect(decorate(() => SkipRateLimit()(Target.prototype, 'computed', descriptor))).toMatchObject({
      message: expect.stringMatching(/not on an accessor, got "Target.computed"$/),
    })
    expect(
      decorate(() => (RateLimit({ limits: '1/s' }) as unknown as ParameterDecorator)(Target.prototype, 'x', 0)),
    ).toMatchObject({ message: expect.stringMatching(/not on a parameter/) })
  })

  it("@nestjs/throttler's options are answered with what to write instead", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { ttl: 60_000, limit: 10 },
        /^ttl is not an option of @RateLimit\(\): set the window in limits: \{ ttl: 60000, limit: 10 \} is limits: \['10\/min'\], got 60000$/,
      ],
      [{ limit: 10 }, /^limit is not an option of @RateLimit\(\): set the limit in limits/],
      [
        { throttlers: [] },
        /^throttlers is not an option of @RateLimit\(\): list the limits, named if you like; they are decided together/,
      ],
      [{ default: { limit: 3, ttl: 1000 } }, /^default is not an option of @RateLimit\(\): name the policy in limits/],
      [{ blockDuration: 1000 }, /^blockDuration .*use blockFor in a policy/],
      [{ getTracker: () => 'k' }, /^getTracker .*use key: \(context\)/],
      [{ skipIf: () => true }, /^skipIf .*use skip: \(context\) => boolean/],
      [{ ignoreUserAgents: [/bot/] }, /^ignoreUserAgents .*use skip/],
      [{ onLimited: () => 1 }, /^onLimited .*@Catch\(RateLimitException\)/],
    ]
    for (const [options, message] of cases) expect(() => RateLimit(options as never)).toThrow(message)
    expect(() => SluiceModule.forRoot({ ttl: 1000 } as never)).toThrow(
      /^ttl is not an option of SluiceModule.forRoot\(\)/,
    )
    expect(() => SluiceModule.forRoot('100/min' as never)).toThrow(ConfigError)
  })

  it('an unknown or bad option fails app.init() with where it was written', async () => {
    @Controller()
    class Api {
      @RateLimit({ limits: '1/s', costt: 2 } as never)
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [Api] })
    class AppModule {}
    await expect(start(AppModule, 'express')).rejects.toThrow(
      /^@RateLimit\(\) on Api.index: costt is not an option of rateLimit\(\): did you mean cost\?/,
    )

    @RateLimit({ limits: '1/s', cost: 5 })
    @Controller()
    class TooDear {
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [TooDear] })
    class DearModule {}
    await expect(start(DearModule, 'express')).rejects.toThrow(
      /^@RateLimit\(\) on TooDear: cost must be a whole number from 1 to 1/,
    )

    @Module({
      imports: [SluiceModule.forRootAsync({ useFactory: () => ({ limits: '1/s', limit: 3 }) as never })],
      controllers: [],
    })
    class AsyncModule {}
    await expect(start(AsyncModule, 'express')).rejects.toThrow(
      /^limit is not an option of SluiceModule.forRootAsync\(\) useFactory/,
    )
  })

  it('a decorator with a cost but no limits anywhere fails app.init(): it would limit nothing', async () => {
    @Controller()
    class Api {
      @RateLimit({ cost: 2 })
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [Api] })
    class AppModule {}
    await expect(start(AppModule, 'express')).rejects.toThrow(/^@RateLimit\(\) on Api.index: limits are required/)
  })

  it('a decorator on a service, or on a controller method that is no handler, fails app.init()', async () => {
    @RateLimit({ limits: '1/s' })
    @Injectable()
    class UsersService {}
    @Controller()
    class Api {
      @Get()
      index() {
        return 'ok'
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [Api], providers: [UsersService] })
    class ServiceModule {}
    await expect(start(ServiceModule, 'express')).rejects.toThrow(
      /^@RateLimit\(\) goes on a controller, a GraphQL resolver or a WebSocket gateway, or on one of their handlers: guards run on nothing else, got "UsersService"$/,
    )

    @Controller()
    class Helper {
      @RateLimit({ limits: '1/s' })
      helper() {
        return 1
      }
    }
    @Module({ imports: [SluiceModule.forRoot()], controllers: [Helper] })
    class HelperModule {}
    await expect(start(HelperModule, 'express')).rejects.toThrow(/got "Helper.helper"$/)
  })
})

describe('@sluice/nestjs module defaults without limits', () => {
  it('limit nothing on their own, serve the decorators, and are checked when the app starts', async () => {
    @Controller()
    class Api {
      @Get('open')
      open() {
        return 'ok'
      }
      @RateLimit({ limits: '1/min' })
      @Get('limited')
      limited() {
        return 'ok'
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ headers: 'draft-7', statusCode: 503 })],
      controllers: [Api],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    })
    class AppModule {}
    const app = await start(AppModule, 'express')
    try {
      expect(await statuses(app, '/open', 3)).toEqual([200, 200, 200])
      const admitted = await get(app, '/limited')
      expect(admitted.headers.ratelimit).toMatch(/^limit=1, remaining=0, reset=\d+$/)
      expect((await get(app, '/limited')).status).toBe(503)
    } finally {
      await app.close()
    }
    @Module({ imports: [SluiceModule.forRoot({ statusCod: 503 } as never)], controllers: [Api] })
    class Misspelt {}
    await expect(start(Misspelt, 'express')).rejects.toThrow(
      /^statusCod is not an option of rateLimit\(\): did you mean statusCode\?/,
    )
  })
})
