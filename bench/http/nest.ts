// NestJS hello world for the HTTP benchmark, on either platform (nest-express.ts, nest-fastify.ts).
// No decorator syntax: Nest's decorators are called as functions, as the compiled code would.
import type { AddressInfo } from 'node:net'
import { type CanActivate, Controller, type ExecutionContext, Get, type INestApplication, Module } from '@nestjs/common'
import { APP_GUARD, NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler'
import { RateLimitGuard, SluiceModule } from '@sluice/nestjs'
import {
  BODY,
  CLIENT_HEADER,
  CONSTANT_HEADERS,
  headersFor,
  isSluice,
  limitsFor,
  listening,
  type Variant,
  variantArg,
} from './config.js'

export type Platform = 'express' | 'fastify'

const clientOf = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers[CLIENT_HEADER] ?? ''

/** A guard that lets everything through: what Nest charges for one guard. */
class NoopGuard implements CanActivate {
  canActivate() {
    return true
  }
}

/** A guard that also sets sluice's two headers as constants, on either platform. */
class HeadersGuard implements CanActivate {
  canActivate(context: ExecutionContext) {
    const response = context.switchToHttp().getResponse()
    for (const [name, value] of CONSTANT_HEADERS) {
      if (response.raw) response.header(name, value)
      else response.setHeader(name, value)
    }
    return true
  }
}

/** The hello-world app of one variant on one platform, initialised but not listening. */
export async function createApp(platform: Platform, variant: Variant): Promise<INestApplication> {
  const limits = limitsFor(variant)

  class HelloController {
    hello() {
      return BODY
    }
  }
  Get()(HelloController.prototype, 'hello', Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello')!)
  Controller()(HelloController)

  const imports: unknown[] = []
  const providers: unknown[] = []
  if (variant === 'noop') providers.push({ provide: APP_GUARD, useClass: NoopGuard })
  else if (variant === 'headers') providers.push({ provide: APP_GUARD, useClass: HeadersGuard })
  else if (isSluice(variant)) {
    imports.push(SluiceModule.forRoot({ limits, headers: headersFor(variant), key: clientOf }))
    providers.push({ provide: APP_GUARD, useClass: RateLimitGuard })
  } else if (variant === 'ntl-1' || variant === 'ntl-2') {
    // One throttler per policy, as throttler's users name them.
    const throttlers = limits.map(({ limit, window }, i) => ({ name: `t${i}`, ttl: window, limit }))
    imports.push(
      ThrottlerModule.forRoot({
        throttlers,
        getTracker: (req: Record<string, unknown>) => (req.headers as Record<string, string>)[CLIENT_HEADER] ?? '',
      }),
    )
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard })
  }
  class AppModule {}
  Module({ imports: imports as never[], controllers: [HelloController], providers: providers as never[] })(AppModule)

  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
  const app = await NestFactory.create(AppModule, adapter, { logger: false, abortOnError: false })
  await app.init()
  return app
}

export async function serve(platform: Platform): Promise<void> {
  const app = await createApp(platform, variantArg(platform === 'express' ? 'nest-express' : 'nest-fastify'))
  await app.listen(0, '127.0.0.1')
  listening((app.getHttpServer().address() as AddressInfo).port)
}
