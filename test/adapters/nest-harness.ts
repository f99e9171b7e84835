// The adapter harness's apps built with Nest: one controller whose handlers are the spec's routes,
// `SluiceModule.forRoot()` with the app-wide limiter's options and `RateLimitGuard` as APP_GUARD,
// `@RateLimit()` on a handler for a route's own limiter. On the Express and the Fastify platform.
import { Readable } from 'node:stream'
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  type HttpServer,
  type INestApplication,
  Module,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common'
import { APP_GUARD, BaseExceptionFilter, NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import type { Decision } from '@sluice/core'
import { RateLimit, RateLimitGuard, RateLimits, SluiceModule, type SluiceModuleOptions } from '@sluice/nestjs'
import express from 'express'
import {
  type App,
  type AppSpec,
  client,
  convert,
  type Harness,
  type Mw,
  type Req as R,
  type RateOptions,
  streamed,
} from './harness.js'

/** What the harness's option functions see of a Nest context, on either platform. */
export function reqOf(context: ExecutionContext): R {
  const request = context
    .switchToHttp()
    .getRequest<{ headers: Record<string, string>; locals?: Record<string, unknown> }>()
  const response = context.switchToHttp().getResponse<{ statusCode: number; raw?: { statusCode: number } }>()
  return {
    header: (name) => request.headers[name.toLowerCase()],
    status: () => (response.raw ?? response).statusCode,
    local: (name) => request.locals?.[name],
  }
}

interface NestMw {
  readonly options: SluiceModuleOptions
}

/** Errors that are not HTTP exceptions answer as the other harnesses' error handlers do: 500 with name and message. */
class ErrorsAsJson extends BaseExceptionFilter {
  constructor(private readonly server: HttpServer) {
    super(server)
  }
  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof HttpException) {
      super.catch(exception, host)
      return
    }
    const error = exception as Error
    this.server.reply(host.switchToHttp().getResponse(), { error: error.name, message: error.message }, 500)
  }
}
Catch()(ErrorsAsJson)

type Platform = 'express' | 'fastify'

function nestHarness(platform: Platform): Harness {
  const rateLimit = (options: RateOptions): Mw => {
    const converted = convert<RateOptions, Decision, [ExecutionContext], never>(options, reqOf, () => {
      throw new Error('onLimited has no Nest form: a denial is a RateLimitException for exception filters')
    }) as SluiceModuleOptions
    // Built now, as the app would when it starts, so that a bad option throws here as the others' do;
    // unchecked, so that this first build and the app's do not read as two limits sharing a store.
    new RateLimits(converted.validate === undefined ? { ...converted, validate: false } : converted).onModuleInit()
    return { options: converted } as unknown as Mw
  }
  return {
    name: platform === 'express' ? 'nest-express' : 'nest-fastify',
    rateLimit,
    concurrencyLimit: () => {
      throw new Error('@sluice/nestjs has no concurrencyLimit')
    },
    adaptiveConcurrency: () => {
      throw new Error('@sluice/nestjs has no adaptiveConcurrency')
    },
    app: (spec) => nestApp(platform, spec),
  }
}

function single(list: Mw[] | undefined, where: string): SluiceModuleOptions | undefined {
  if (list === undefined || list.length === 0) return undefined
  if (list.length > 1) throw new Error(`Nest applies one limit per handler: ${where} stacks ${list.length}`)
  return (list[0] as unknown as NestMw).options
}

async function nestApp(platform: Platform, spec: AppSpec): Promise<App> {
  if (spec.startResponse) throw new Error('a Nest guard runs before any middleware could start the response')
  const counter = { handled: 0 }
  class HarnessController {}
  const proto = HarnessController.prototype as unknown as Record<string, unknown>
  spec.routes.forEach((route, index) => {
    const handler = route.handler ?? 'ok'
    if (handler === 'tick') throw new Error('Nest awaits every guard: no handler runs in the tick its request came in')
    const name = `route${index}`
    proto[name] = async (req: Record<string, unknown>, res: NestResponse) => {
      counter.handled++
      if (handler === 'ok') return { rateLimit: req.rateLimit ?? null }
      if (handler === 'throw') throw new Error('handler failed')
      if (handler === 'text') return 'handled'
      if ('status' in handler) {
        statusOf(res, handler.status)
        return { status: handler.status }
      }
      if ('spend' in handler) {
        req.locals = { unitsUsed: handler.spend }
        return { spent: handler.spend }
      }
      if ('properties' in handler) {
        return Object.fromEntries(handler.properties.map((property) => [property, req[property] ?? null]))
      }
      return new StreamableFile(Readable.from(streamed(handler.stream, handler.entered)))
    }
    const descriptor = Object.getOwnPropertyDescriptor(proto, name) as PropertyDescriptor
    Req()(proto, name, 0)
    Res({ passthrough: true })(proto, name, 1)
    Get(route.path)(proto, name, descriptor)
    const own = single(route.use, route.path)
    if (own) RateLimit(own as never)(proto, name, descriptor)
  })
  Controller()(HarnessController)
  class AppModule {}
  Module({
    imports: [SluiceModule.forRoot(single(spec.use, 'the app') ?? {})],
    controllers: [HarnessController],
    providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
  })(AppModule)

  let app: INestApplication
  if (platform === 'express') {
    const instance = express()
    if (spec.trustProxy) instance.set('trust proxy', spec.trustProxy === 'all' ? true : 1)
    if (spec.noAddress)
      instance.use((req, _res, next) => next(void Object.defineProperty(req, 'ip', { value: undefined })))
    app = await NestFactory.create(AppModule, new ExpressAdapter(instance), { logger: false, abortOnError: false })
  } else {
    // Fastify 5 refuses a hop count (it cannot check the peer): one trusted proxy is its address.
    const adapter = new FastifyAdapter(
      spec.trustProxy ? { trustProxy: spec.trustProxy === 'all' ? true : '127.0.0.1' } : {},
    )
    if (spec.noAddress) {
      adapter.getInstance().addHook('onRequest', async (request) => {
        Object.defineProperty(request, 'ip', { value: undefined })
      })
    }
    app = await NestFactory.create(AppModule, adapter, { logger: false, abortOnError: false })
  }
  app.useGlobalFilters(new ErrorsAsJson(app.getHttpAdapter()))
  await app.listen(0, '127.0.0.1')
  const http = client(app.getHttpServer(), counter)
  return {
    // Nest's platforms answer an object as JSON with a charset parameter (Express's res.json,
    // Fastify's serializer); the cases check the media type.
    async get(path, headers) {
      const reply = await http.get(path, headers)
      const type = reply.headers['content-type']
      if (type?.includes('json')) reply.headers['content-type'] = type.replace('; charset=utf-8', '')
      return reply
    },
    head: http.head,
    openAndAbort: http.openAndAbort,
    abortWhen: http.abortWhen,
    get handled() {
      return counter.handled
    },
    async close() {
      await Promise.all([http.close(), app.close()])
    },
  }
}

interface NestResponse {
  status?(code: number): unknown
  code?(code: number): unknown
}

function statusOf(res: NestResponse, status: number): void {
  if (res.code) res.code(status)
  else res.status?.(status)
}

export const nestHarnesses: readonly Harness[] = [nestHarness('express'), nestHarness('fastify')]
