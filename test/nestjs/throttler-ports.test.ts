// @nestjs/throttler's e2e suite (github.com/nestjs/throttler, test/, at 5936ae9), each case
// translated to @sluice/nestjs and named for its origin. The translation: a throttler becomes a
// policy in limits (fixed windows, as throttler counts); @Throttle becomes @RateLimit on the same
// class or handler, @SkipThrottle becomes @SkipRateLimit (or a handler's own limits, for a skip of
// some named throttlers), getTracker becomes key, skipIf and ignoreUserAgents become skip,
// errorMessage becomes message. Throttler counts each route apart; a limit declared on a class or
// handler here counts there, as the ported controllers declare theirs. What differs by design:
// several named limits are one all-or-nothing set (a request refused by one takes nothing from
// the others), a refused request is not counted, and headers are the IETF RateLimit fields, not
// X-RateLimit-*. Waits are an injected clock moved forward, not sleeps.

import { Controller, type ExecutionContext, Get, Module, Post } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { MemoryStore } from '@sluice/core'
import { RateLimit, RateLimitGuard, SkipRateLimit, SluiceModule, type SluiceModuleOptions } from '@sluice/nestjs'
import { describe, expect, it } from 'vitest'
import { get, platforms, type Reply, start } from './app.js'

const T0 = 1_800_000_000_000
const fixed = (limit: number, seconds: number, name?: string) => ({
  limit,
  window: seconds * 1000,
  algorithm: 'fixed-window' as const,
  ...(name !== undefined && { name }),
})

/** The `r` of one member (by name, or the only one) of the draft-11 RateLimit header. */
function remaining(reply: Reply, name?: string): number | undefined {
  const members = (reply.headers.ratelimit ?? '').split(', ').filter(Boolean)
  const member = name === undefined ? members[0] : members.find((m) => m.startsWith(`"${name}";`))
  const r = member === undefined ? undefined : /;r=(\d+)/.exec(member)?.[1]
  return r === undefined ? undefined : Number(r)
}

async function appOf(controllers: object[], options: SluiceModuleOptions, platform: 'express' | 'fastify') {
  const clock = { now: T0 }
  @Module({
    imports: [SluiceModule.forRoot({ store: new MemoryStore({ now: () => clock.now }), ...options })],
    controllers: controllers as never[],
    providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
  })
  class AppModule {}
  return { app: await start(AppModule, platform), clock }
}

const userAgent = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['user-agent'] ?? ''

// test/app/controllers/*.ts and controller.module.ts: the module's throttler is 5 per minute,
// blocking 20 s, ignoring user agents /throttler-test/.
@RateLimit({ limits: fixed(2, 10) })
@Controller()
class AppController {
  @Get()
  test() {
    return { success: true }
  }
  @SkipRateLimit()
  @Get('ignored')
  ignored() {
    return { ignored: true }
  }
  @Get('ignore-user-agents')
  ignoreUserAgents() {
    return { ignored: true }
  }
}
@Controller('default')
class DefaultController {
  @Get()
  getDefault() {
    return { success: true }
  }
}
@RateLimit({ limits: fixed(2, 10) })
@Controller('limit')
class LimitController {
  @Get()
  getThrottled() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(5, 10) })
  @Get('higher')
  getHigher() {
    return { success: true }
  }
}
@Controller('test/throttle')
class ThrottleTestController {
  @RateLimit({ limits: fixed(1, 1) })
  @Post()
  testThrottle() {
    return { code: 'THROTTLE_TEST' }
  }
}
const controllerModule: SluiceModuleOptions = {
  limits: fixed(5, 60),
  skip: (context) => /throttler-test/.test(userAgent(context)),
}

describe.each(platforms)('ports of @nestjs/throttler test/controller.e2e-spec.ts, on %s', (platform) => {
  const controllers = [AppController, DefaultController, LimitController, ThrottleTestController]

  it("[controller.e2e-spec.ts 'AppController GET /ignored'] a skipped handler answers without rate-limit headers", async () => {
    const { app } = await appOf(controllers, controllerModule, platform)
    try {
      const reply = await get(app, '/ignored')
      expect(reply.body).toEqual({ ignored: true })
      expect(reply.headers.ratelimit).toBeUndefined()
    } finally {
      await app.close()
    }
  })

  it("[controller.e2e-spec.ts 'AppController GET /ignore-user-agents'] skip by user agent answers without rate-limit headers", async () => {
    const { app } = await appOf(controllers, controllerModule, platform)
    try {
      const reply = await get(app, '/ignore-user-agents', { 'user-agent': 'throttler-test/0.0.0' })
      expect(reply.body).toEqual({ ignored: true })
      expect(reply.headers.ratelimit).toBeUndefined()
    } finally {
      await app.close()
    }
  })

  it("[controller.e2e-spec.ts 'AppController GET /'] the controller's limit: 2, one left", async () => {
    const { app } = await appOf(controllers, controllerModule, platform)
    try {
      const reply = await get(app, '/')
      expect(reply.body).toEqual({ success: true })
      expect(reply.headers['ratelimit-policy']).toBe('"2-per-10s";q=2;w=10')
      expect(remaining(reply)).toBe(1)
    } finally {
      await app.close()
    }
  })

  for (const [url, limit] of [
    ['', 2],
    ['/higher', 5],
  ] as const) {
    it(`[controller.e2e-spec.ts 'LimitController GET ${url}'] ${limit} admitted counting down, then 429 with Retry-After, then admitted again once it has passed`, async () => {
      const { app, clock } = await appOf(controllers, controllerModule, platform)
      try {
        for (let i = 0; i < limit; i++) {
          const reply = await get(app, `/limit${url}`)
          expect(reply.body).toEqual({ success: true })
          expect(reply.headers['ratelimit-policy']).toBe(`"${limit}-per-10s";q=${limit};w=10`)
          expect(remaining(reply)).toBe(limit - (i + 1))
        }
        const denied = await get(app, `/limit${url}`)
        expect(denied.status).toBe(429)
        expect(denied.headers['retry-after']).toMatch(/^\d+$/)
        expect(denied.body).toMatchObject({ status: 429, title: 'Too Many Requests' })
        clock.now += Number(denied.headers['retry-after']) * 1000
        const again = await get(app, `/limit${url}`)
        expect(again.body).toEqual({ success: true })
        expect(remaining(again)).toBe(limit - 1)
      } finally {
        await app.close()
      }
    })
  }

  it("[controller.e2e-spec.ts 'DefaultController GET /default'] the module's limit: 5 admitted, 429, admitted again after Retry-After", async () => {
    const { app, clock } = await appOf(controllers, controllerModule, platform)
    try {
      for (let i = 0; i < 5; i++) expect(remaining(await get(app, '/default'))).toBe(5 - (i + 1))
      const denied = await get(app, '/default')
      expect(denied.status).toBe(429)
      expect(denied.headers['retry-after']).toMatch(/^\d+$/)
      clock.now += Number(denied.headers['retry-after']) * 1000
      const again = await get(app, '/default')
      expect(again.body).toEqual({ success: true })
      expect(remaining(again)).toBe(4)
    } finally {
      await app.close()
    }
  })

  it("[controller.e2e-spec.ts 'ThrottlerTestController GET /test/throttle'] 1 per second: 201, a second later 201, then 429, 429", async () => {
    const { app, clock } = await appOf(controllers, controllerModule, platform)
    try {
      const { default: request } = await import('supertest')
      const post = async () => (await request(app.getHttpServer()).post('/test/throttle')).status
      expect(await post()).toBe(201)
      clock.now += 1000
      expect(await post()).toBe(201)
      expect(await post()).toBe(429)
      expect(await post()).toBe(429)
    } finally {
      await app.close()
    }
  })
})

describe.each(platforms)("ports of @nestjs/throttler test/controller.e2e-spec.ts 'SkipIf suite', on %s", (platform) => {
  it("[controller.e2e-spec.ts 'should skip throttling if skipIf returns true'] 15 requests, none limited, no headers", async () => {
    const { app } = await appOf([DefaultController], { limits: fixed(5, 60), skip: () => true }, platform)
    try {
      for (let i = 0; i < 15; i++) {
        const reply = await get(app, '/default')
        expect(reply.status).toBe(200)
        expect(reply.headers.ratelimit).toBeUndefined()
      }
    } finally {
      await app.close()
    }
  })
})

// test/error-message: two throttlers of 2 per 3 s, each route skipping one; errorMessage names
// the class, the handler, the tracker and the hits.
@Controller()
class CustomErrorMessageController {
  @RateLimit({ limits: fixed(2, 3, 'default') })
  @Get('default')
  defaultRoute() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(2, 3, 'other') })
  @Get('other')
  otherRoute() {
    return { success: true }
  }
}

describe.each(platforms)('ports of @nestjs/throttler test/error-message, on %s', (platform) => {
  for (const route of ['default', 'other']) {
    it(`[custom-error-message.e2e-spec.ts 'Custom-error-message Route - ${route}'] the third request gets the message built from the context`, async () => {
      const message = (context: ExecutionContext, decision: { key: string; limit: number }) =>
        `${context.getClass().name}-${context.getHandler().name} ${decision.key} ${decision.limit + 1}`
      const { app } = await appOf([CustomErrorMessageController], { message }, platform)
      try {
        for (let i = 0; i < 2; i++) expect((await get(app, `/${route}`)).status).toBe(200)
        const denied = await get(app, `/${route}`)
        expect(denied.status).toBe(429)
        expect(JSON.stringify(denied.body)).toContain(`CustomErrorMessageController-${route}Route 127.0.0.1 3`)
      } finally {
        await app.close()
      }
    })
  }
})

// test/function-overrides: 'default' counts each route; 'custom' has one tracker string and one
// key for every route, so its routes count together.
@Controller()
class FunctionOverridesController {
  @RateLimit({ limits: fixed(2, 3) })
  @Get()
  simpleRoute() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(2, 3) })
  @Get('1')
  simpleRouteOne() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(2, 3), namespace: 'custom', key: () => 'customTrackerString' })
  @Get('custom')
  simpleRouteTwo() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(2, 3), namespace: 'custom', key: () => 'customTrackerString' })
  @Get('custom/1')
  simpleRouteThree() {
    return { success: true }
  }
}

describe.each(platforms)('ports of @nestjs/throttler test/function-overrides, on %s', (platform) => {
  it("[function-overrides-throttler.e2e-spec.ts 'Default Routes'] each route counts apart: 3 requests within 3 s to one route get a 429", async () => {
    const { app, clock } = await appOf([FunctionOverridesController], {}, platform)
    try {
      const first = await get(app, '/')
      expect(first.headers['ratelimit-policy']).toBe('"2-per-3s";q=2;w=3')
      expect(remaining(first)).toBe(1)
      expect(remaining(await get(app, '/1'))).toBe(1)
      expect(remaining(await get(app, '/'))).toBe(0)
      const denied = await get(app, '/')
      expect(denied.status).toBe(429)
      expect(denied.headers['retry-after']).toMatch(/^\d+$/)
      expect(remaining(await get(app, '/1'))).toBe(0)
      expect((await get(app, '/')).status).toBe(429)
      clock.now += 3000
      expect(remaining(await get(app, '/'))).toBe(1)
    } finally {
      await app.close()
    }
  })

  it("[function-overrides-throttler.e2e-spec.ts 'Custom Routes'] one key and namespace for both routes: they count together", async () => {
    const { app, clock } = await appOf([FunctionOverridesController], {}, platform)
    try {
      expect(remaining(await get(app, '/custom'))).toBe(1)
      expect(remaining(await get(app, '/custom/1'))).toBe(0)
      const denied = await get(app, '/custom')
      expect(denied.status).toBe(429)
      expect(denied.headers['retry-after']).toMatch(/^\d+$/)
      expect((await get(app, '/custom/1')).status).toBe(429)
      clock.now += 3000
      expect(remaining(await get(app, '/custom'))).toBe(1)
      expect(remaining(await get(app, '/custom/1'))).toBe(0)
    } finally {
      await app.close()
    }
  })
})

// test/multi: three throttlers, default 2 per 5 s, long 5 per minute, short 1 per second.
const multi = [fixed(2, 5, 'default'), fixed(5, 60, 'long'), fixed(1, 1, 'short')]
@Controller()
class MultiController {
  @Get()
  simpleRoute() {
    return { success: true }
  }
  @RateLimit({ limits: [fixed(2, 5, 'default'), fixed(5, 60, 'long')] })
  @Get('skip-short')
  skipShort() {
    return { success: true }
  }
  @RateLimit({ limits: fixed(1, 1, 'short') })
  @Get('skip-default-and-long')
  skipDefaultAndLong() {
    return { success: true }
  }
}

describe.each(platforms)('ports of @nestjs/throttler test/multi, on %s', (platform) => {
  it("[multi-throttler.e2e-spec.ts 'Default Route: 1/s, 2/5s, 5/min'] each limit refuses in turn; a refusal takes nothing from the others", async () => {
    const { app, clock } = await appOf([MultiController], { limits: multi }, platform)
    try {
      // 'should receive an exception when firing 2 requests within a second'
      const first = await get(app, '/')
      expect([remaining(first, 'short'), remaining(first, 'default'), remaining(first, 'long')]).toEqual([0, 1, 4])
      const second = await get(app, '/')
      expect(second.status).toBe(429)
      expect(second.body).toMatchObject({ 'violated-policies': ['short'] })
      expect(second.headers['retry-after']).toBe('1')
      clock.now += 1000
      // 'should get an error if we send two more requests within the first five seconds'
      const third = await get(app, '/')
      expect([remaining(third, 'default'), remaining(third, 'long')]).toEqual([0, 3])
      clock.now += 1000
      const fourth = await get(app, '/')
      expect(fourth.status).toBe(429)
      expect(fourth.body).toMatchObject({ 'violated-policies': ['default'] })
      expect(fourth.headers['retry-after']).toBe('3')
      clock.now += 5000
      // 'should get an error if we smartly send 4 more requests within the minute'
      expect(remaining(await get(app, '/'), 'long')).toBe(2)
      clock.now += 1000
      expect(remaining(await get(app, '/'), 'default')).toBe(0)
      clock.now += 5000
      const fifth = await get(app, '/')
      expect([remaining(fifth, 'long'), remaining(fifth, 'short'), remaining(fifth, 'default')]).toEqual([0, 0, 1])
      clock.now += 1000
      const refused = await get(app, '/')
      expect(refused.status).toBe(429)
      expect(refused.body).toMatchObject({ 'violated-policies': ['long'] })
      expect(refused.headers['retry-after']).toMatch(/^\d+$/)
    } finally {
      await app.close()
    }
  })

  it("[multi-throttler.e2e-spec.ts 'skips should skip the short throttler'] default counts down, short is not there", async () => {
    const { app } = await appOf([MultiController], { limits: multi }, platform)
    try {
      const first = await get(app, '/skip-short')
      expect(remaining(first, 'default')).toBe(1)
      expect(remaining(first, 'short')).toBeUndefined()
      expect(remaining(await get(app, '/skip-short'), 'default')).toBe(0)
    } finally {
      await app.close()
    }
  })

  it("[multi-throttler.e2e-spec.ts 'skips should skip the default and long trackers'] only short's header", async () => {
    const { app } = await appOf([MultiController], { limits: multi }, platform)
    try {
      const reply = await get(app, '/skip-default-and-long')
      expect(remaining(reply, 'short')).toBe(0)
      expect(remaining(reply, 'default')).toBeUndefined()
      expect(remaining(reply, 'long')).toBeUndefined()
    } finally {
      await app.close()
    }
  })
})
