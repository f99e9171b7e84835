// One description of an app, built four times: with @sluice/express, @sluice/koa, @sluice/hono
// and @sluice/fastify. Cases in adapters.test.ts only speak this neutral language, so every case runs
// unchanged against every adapter, over real HTTP.
import { createServer, get, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { createAdaptorServer } from '@hono/node-server'
import Router from '@koa/router'
import type { AdaptiveLimiter, Decision, Limiter } from '@sluice/core'
import type { ConcurrencyInfo, OverloadInfo } from '@sluice/core/adapter'
import * as sluiceExpress from '@sluice/express'
import * as sluiceFastify from '@sluice/fastify'
import * as sluiceHono from '@sluice/hono'
import * as sluiceKoa from '@sluice/koa'
import express, { type ErrorRequestHandler, type RequestHandler } from 'express'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { Hono, type Context as HonoContext, type MiddlewareHandler } from 'hono'
import Koa, { type Context as KoaContext, type Middleware as KoaMiddleware } from 'koa'
import request from 'supertest'

/** What option functions see of a request, whichever the framework. */
export interface Req {
  header(name: string): string | undefined
  /** The response status as it stands (final once the response is done). */
  status(): number
  /** What the handler left for the middleware: `res.locals` (Express), `ctx.state` (Koa), `c.var` (Hono). */
  local(name: string): unknown
}

/** What a custom onLimited answers, written by each framework its own way. */
export interface Custom {
  status?: number
  body: unknown
  /** Answer nothing at all (an onLimited that forgets to respond). */
  silent?: boolean
}

type Neutral<O, I> = Omit<
  O,
  'key' | 'skip' | 'cost' | 'message' | 'onLimited' | 'requestWasSuccessful' | 'actualCost' | 'limiter'
> & {
  actualCost?: (r: Req) => number | undefined
  limiter?: Limiter | ((r: Req) => Limiter | Promise<Limiter>)
  key?: (r: Req) => string
  skip?: (r: Req) => boolean
  requestWasSuccessful?: (r: Req) => boolean | Promise<boolean>
  cost?: number | ((r: Req) => number)
  message?: string | object | ((r: Req, info: I) => string | object)
  onLimited?: (r: Req, info: I) => Custom
}
export type RateOptions = Neutral<sluiceExpress.RateLimitOptions, Decision>
export type ConcurrencyOptions = Neutral<sluiceExpress.ConcurrencyLimitOptions, ConcurrencyInfo>
export type AdaptiveOptions = Omit<
  Neutral<sluiceExpress.AdaptiveConcurrencyOptions, OverloadInfo>,
  'priority' | 'limiter'
> & {
  priority?: (r: Req) => string | undefined
  limiter?: sluiceExpress.AdaptiveConcurrencyOptions['limiter']
}

/** A middleware made by one harness, only usable in that harness's apps. */
export type Mw = { readonly __middleware: unique symbol }

export type Handler =
  /** 200 with `{ rateLimit: <the decision or null> }`. */
  | 'ok'
  | 'throw'
  /** 200 with the plain text "handled", setting no header (for a response already started). */
  | 'text'
  /** This status with `{ status }` as the body (a login that fails with 401, a 500). */
  | { status: number }
  /** 200, leaving `unitsUsed` for the middleware (see `Req.local`): the work's cost, known after it. */
  | { spend: number }
  /** 200 with the decision (or null) under each of these names (requestPropertyName). */
  | { properties: readonly string[] }
  /** Writes "a", signals `entered`, waits for `gate`, writes "b" and ends. */
  | { stream: Promise<void>; entered?: () => void }
  /**
   * 200 with `{ sameTick }`: whether the handler runs in the same tick as the app's first
   * middleware, before any microtask queued there (no middleware in between waited on a promise).
   */
  | 'tick'

/** The requests (or contexts) whose first middleware's tick has not yet ended: see the 'tick' handler. */
const inFirstTick = new WeakSet<object>()
function markFirstTick(request: object): void {
  inFirstTick.add(request)
  queueMicrotask(() => inFirstTick.delete(request))
}
const probesTicks = (spec: AppSpec) => spec.routes.some((route) => route.handler === 'tick')

export interface AppSpec {
  /**
   * true: trust exactly one proxy hop, so the right-most X-Forwarded-For entry is the client.
   * 'all' (Express and Koa): trust every entry, so the left-most, client-written one is.
   */
  trustProxy?: boolean | 'all'
  /** Pretend the framework cannot tell the client's address. */
  noAddress?: boolean
  /** Send the status and headers before any limiter runs (Express and Koa only). */
  startResponse?: boolean
  use?: Mw[]
  routes: { path: string; use?: Mw[]; handler?: Handler }[]
}

export interface Reply {
  status: number
  headers: Record<string, string | undefined>
  text: string
  body: unknown
}

export interface App {
  get(path: string, headers?: Record<string, string>): Promise<Reply>
  /** A HEAD request to a GET route: status and headers, no body. */
  head(path: string): Promise<Omit<Reply, 'body' | 'text'>>
  /** Starts a GET, resolves once the first body bytes arrive, and returns a function that aborts it. */
  openAndAbort(path: string): Promise<() => void>
  /** Starts a GET and aborts it, before any answer, once `when` resolves. */
  abortWhen(path: string, when: Promise<void>): Promise<void>
  /** Requests handled by a route handler (so a denial that let one through shows up). */
  readonly handled: number
  close(): Promise<void>
}

export interface Harness {
  readonly name: 'express' | 'koa' | 'hono' | 'fastify' | 'nest-express' | 'nest-fastify'
  rateLimit(options: RateOptions): Mw
  concurrencyLimit(options: ConcurrencyOptions): Mw
  adaptiveConcurrency(options: AdaptiveOptions): Mw & { readonly limiter: AdaptiveLimiter }
  app(spec: AppSpec): Promise<App>
}

const mw = (value: unknown): Mw => value as Mw

export function convert<O extends Neutral<object, I>, I, Args extends unknown[], R>(
  options: O,
  reqOf: (...args: Args) => Req,
  custom: (args: Args, out: Custom) => R,
) {
  const { key, skip, cost, message, onLimited, requestWasSuccessful, actualCost, ...rest } = options
  const { limiter } = options as { limiter?: Limiter | ((r: Req) => Limiter | Promise<Limiter>) }
  return {
    ...rest,
    ...(typeof limiter === 'function' && { limiter: (...args: Args) => limiter(reqOf(...args)) }),
    ...(key && { key: (...args: Args) => key(reqOf(...args)) }),
    ...(skip && { skip: (...args: Args) => skip(reqOf(...args)) }),
    ...(requestWasSuccessful && {
      requestWasSuccessful: (...args: Args) => requestWasSuccessful(reqOf(...args)),
    }),
    ...(actualCost !== undefined && {
      // A bad value goes through as it is, for the validation to name it.
      actualCost: typeof actualCost === 'function' ? (...args: Args) => actualCost(reqOf(...args)) : actualCost,
    }),
    ...(cost !== undefined && {
      cost: typeof cost === 'number' ? cost : (...args: Args) => cost(reqOf(...args)),
    }),
    ...(message !== undefined && {
      message:
        typeof message === 'function'
          ? (...all: [...Args, I]) => message(reqOf(...(all.slice(0, -1) as Args)), all.at(-1) as I)
          : message,
    }),
    ...(onLimited && {
      onLimited: (...all: [...Args, I]): R => {
        const args = all.slice(0, -1) as Args
        return custom(args, onLimited(reqOf(...args), all.at(-1) as I))
      },
    }),
  }
}

/** `convert`, and `priority` of the neutral request. */
function convertAdaptive<Args extends unknown[], R>(
  options: AdaptiveOptions,
  reqOf: (...args: Args) => Req,
  custom: (args: Args, out: Custom) => R,
) {
  const { priority, ...rest } = options
  return {
    ...convert<Neutral<object, OverloadInfo>, OverloadInfo, Args, R>(
      rest as Neutral<object, OverloadInfo>,
      reqOf,
      custom,
    ),
    ...(priority && { priority: (...args: Args) => priority(reqOf(...args)) }),
  } as never
}

async function listen(server: Server): Promise<Server> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

export function client(server: Server, counter: { handled: number }): App {
  const { port } = server.address() as AddressInfo
  return {
    async get(path, headers = {}) {
      const res = await request(server).get(path).set(headers)
      return {
        status: res.status,
        headers: res.headers as Record<string, string>,
        text: res.text,
        body: res.type.includes('json') ? JSON.parse(res.text) : res.text,
      }
    },
    async head(path) {
      const res = await request(server).head(path)
      return { status: res.status, headers: res.headers as Record<string, string> }
    },
    openAndAbort(path) {
      return new Promise((resolve, reject) => {
        const outgoing = get({ host: '127.0.0.1', port, path }, (res) => {
          res.once('data', () => resolve(() => outgoing.destroy()))
        })
        outgoing.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ECONNRESET') reject(error)
        })
      })
    },
    async abortWhen(path, when) {
      const outgoing = get({ host: '127.0.0.1', port, path })
      outgoing.on('error', () => {})
      await when
      outgoing.destroy()
    },
    get handled() {
      return counter.handled
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // A failed case can leave a response open; do not wait for it.
        server.closeAllConnections()
      }),
  }
}

export const streamed = async function* (gate: Promise<void>, entered?: () => void) {
  yield 'a'
  entered?.()
  await gate
  yield 'b'
}

export const expressHarness: Harness = {
  name: 'express',
  rateLimit: (options) =>
    mw(
      sluiceExpress.rateLimit(
        convert(
          options,
          (req: express.Request, res: express.Response) => ({
            header: (n: string) => req.get(n),
            status: () => res.statusCode,
            local: (n: string) => res.locals[n],
          }),
          ([, res], out) => (out.silent ? undefined : res.status(out.status ?? res.statusCode).json(out.body)),
        ),
      ),
    ),
  concurrencyLimit: (options) =>
    mw(
      sluiceExpress.concurrencyLimit(
        convert(
          options,
          (req: express.Request, res: express.Response) => ({
            header: (n: string) => req.get(n),
            status: () => res.statusCode,
            local: (n: string) => res.locals[n],
          }),
          ([, res], out) => (out.silent ? undefined : res.status(out.status ?? res.statusCode).json(out.body)),
        ),
      ),
    ),
  adaptiveConcurrency: (options) =>
    sluiceExpress.adaptiveConcurrency(
      convertAdaptive(
        options,
        (req: express.Request, res: express.Response) => ({
          header: (n: string) => req.get(n),
          status: () => res.statusCode,
          local: (n: string) => res.locals[n],
        }),
        ([, res], out) => (out.silent ? undefined : res.status(out.status ?? res.statusCode).json(out.body)),
      ),
    ) as unknown as Mw & { readonly limiter: AdaptiveLimiter },
  async app(spec) {
    const counter = { handled: 0 }
    const app = express()
    if (probesTicks(spec)) app.use((req, _res, next) => next(void markFirstTick(req)))
    if (spec.trustProxy) app.set('trust proxy', spec.trustProxy === 'all' ? true : 1)
    if (spec.noAddress) app.use((req, _res, next) => next(void Object.defineProperty(req, 'ip', { value: undefined })))
    if (spec.startResponse) app.use((_req, res, next) => next(void res.flushHeaders()))
    for (const m of spec.use ?? []) app.use(m as unknown as RequestHandler)
    const router = express.Router()
    for (const route of spec.routes) {
      const handler = route.handler ?? 'ok'
      router.get(route.path, ...((route.use ?? []) as unknown as RequestHandler[]), async (req, res) => {
        counter.handled++
        if (handler === 'ok') return void res.json({ rateLimit: sluiceExpress.rateLimitOf(req) ?? null })
        if (handler === 'tick') return void res.json({ sameTick: inFirstTick.has(req) })
        if (handler === 'throw') throw new Error('handler failed')
        if (handler === 'text') return void res.end('handled')
        if ('status' in handler) return void res.status(handler.status).json({ status: handler.status })
        if ('spend' in handler) {
          res.locals.unitsUsed = handler.spend
          return void res.json({ spent: handler.spend })
        }
        if ('properties' in handler) {
          const bag = req as unknown as Record<string, unknown>
          return void res.json(Object.fromEntries(handler.properties.map((name) => [name, bag[name] ?? null])))
        }
        for await (const chunk of streamed(handler.stream, handler.entered)) res.write(chunk)
        res.end()
      })
    }
    app.use(router)
    const onError: ErrorRequestHandler = (error: Error, _req, res, _next) => {
      res.status(500).json({ error: error.name, message: error.message })
    }
    app.use(onError)
    return client(await listen(createServer(app)), counter)
  },
}

const koaReq = (ctx: KoaContext): Req => ({
  header: (n) => ctx.get(n) || undefined,
  status: () => ctx.status,
  local: (n) => ctx.state[n],
})
const koaCustom = ([ctx]: [KoaContext], out: Custom) => {
  if (out.silent) return
  if (out.status) ctx.status = out.status
  ctx.body = out.body
}

export const koaHarness: Harness = {
  name: 'koa',
  rateLimit: (options) => mw(sluiceKoa.rateLimit(convert(options, koaReq, koaCustom))),
  concurrencyLimit: (options) => mw(sluiceKoa.concurrencyLimit(convert(options, koaReq, koaCustom))),
  adaptiveConcurrency: (options) =>
    sluiceKoa.adaptiveConcurrency(convertAdaptive(options, koaReq, koaCustom)) as unknown as Mw & {
      readonly limiter: AdaptiveLimiter
    },
  async app(spec) {
    const counter = { handled: 0 }
    const app = new Koa(spec.trustProxy ? { proxy: true, maxIpsCount: spec.trustProxy === 'all' ? 0 : 1 } : {})
    app.silent = true
    if (probesTicks(spec))
      app.use((ctx, next) => {
        markFirstTick(ctx)
        return next()
      })
    app.use(async (ctx, next) => {
      try {
        await next()
      } catch (error) {
        ctx.status = 500
        ctx.body = { error: (error as Error).name, message: (error as Error).message }
      }
    })
    if (spec.noAddress)
      app.use((ctx, next) => {
        Object.defineProperty(ctx.request, 'ip', { value: '' })
        return next()
      })
    if (spec.startResponse)
      app.use((ctx, next) => {
        ctx.status = 200
        ctx.res.flushHeaders()
        return next()
      })
    for (const m of spec.use ?? []) app.use(m as unknown as KoaMiddleware)
    const router = new Router()
    for (const route of spec.routes) {
      const handler = route.handler ?? 'ok'
      router.get(route.path, ...((route.use ?? []) as unknown as KoaMiddleware[]), async (ctx) => {
        counter.handled++
        if (handler === 'ok') ctx.body = { rateLimit: ctx.state.rateLimit ?? null }
        else if (handler === 'tick') ctx.body = { sameTick: inFirstTick.has(ctx) }
        else if (handler === 'throw') throw new Error('handler failed')
        else if (handler === 'text') ctx.body = 'handled'
        else if ('properties' in handler) {
          ctx.body = Object.fromEntries(handler.properties.map((name) => [name, ctx.state[name] ?? null]))
        } else if ('status' in handler) {
          ctx.status = handler.status
          ctx.body = { status: handler.status }
        } else if ('spend' in handler) {
          ctx.state.unitsUsed = handler.spend
          ctx.body = { spent: handler.spend }
        } else {
          ctx.type = 'text'
          ctx.body = Readable.from(streamed(handler.stream, handler.entered))
        }
      })
    }
    app.use(router.routes())
    return client(await listen(createServer(app.callback())), counter)
  },
}

const honoReq = (c: HonoContext): Req => ({
  header: (n) => c.req.header(n),
  status: () => c.res.status,
  local: (n) => (c.get as (name: string) => unknown)(n),
})
const honoCustom = ([c]: [HonoContext], out: Custom) =>
  out.silent ? (undefined as unknown as Response) : c.json(out.body as object, (out.status ?? 429) as 429)

export const honoHarness: Harness = {
  name: 'hono',
  rateLimit: (options) => mw(sluiceHono.rateLimit(convert(options, honoReq, honoCustom))),
  concurrencyLimit: (options) => mw(sluiceHono.concurrencyLimit(convert(options, honoReq, honoCustom))),
  adaptiveConcurrency: (options) =>
    sluiceHono.adaptiveConcurrency(convertAdaptive(options, honoReq, honoCustom)) as unknown as Mw & {
      readonly limiter: AdaptiveLimiter
    },
  async app(spec) {
    const counter = { handled: 0 }
    const app = new Hono<{ Variables: sluiceHono.RateLimitVariables }>()
    app.onError((error, c) => c.json({ error: error.name, message: error.message }, 500))
    if (probesTicks(spec))
      app.use((c, next) => {
        markFirstTick(c)
        return next()
      })
    // Hono has no trust-proxy setting: an app behind one proxy hands the right-most
    // X-Forwarded-For entry to the limiter as the connection's address, as this does.
    if (spec.trustProxy || spec.noAddress)
      app.use(async (c, next) => {
        const forwarded = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim()
        c.env = spec.noAddress ? {} : { incoming: { socket: { remoteAddress: forwarded ?? '127.0.0.1' } } }
        await next()
      })
    for (const m of spec.use ?? []) app.use(m as unknown as MiddlewareHandler)
    for (const route of spec.routes) {
      const handler = route.handler ?? 'ok'
      const final: MiddlewareHandler<{ Variables: sluiceHono.RateLimitVariables }> = async (c) => {
        counter.handled++
        if (handler === 'ok') return c.json({ rateLimit: c.get('rateLimit') ?? null })
        if (handler === 'tick') return c.json({ sameTick: inFirstTick.has(c) })
        if (handler === 'throw') throw new Error('handler failed')
        if (handler === 'text') return c.text('handled')
        if ('status' in handler) return c.json({ status: handler.status }, handler.status as 401)
        if ('spend' in handler) {
          ;(c.set as (name: string, value: unknown) => void)('unitsUsed', handler.spend)
          return c.json({ spent: handler.spend })
        }
        if ('properties' in handler) {
          const get = c.get as (name: string) => unknown
          return c.json(Object.fromEntries(handler.properties.map((name) => [name, get(name) ?? null])))
        }
        const encoder = new TextEncoder()
        const chunks = streamed(handler.stream, handler.entered)
        return c.body(
          new ReadableStream<Uint8Array>({
            async pull(controller) {
              const next = await chunks.next()
              if (next.done) controller.close()
              else controller.enqueue(encoder.encode(next.value))
            },
          }),
        )
      }
      // Route-level middleware, as in app.get(path, limiter, handler).
      const chain = [...(route.use ?? []), final] as unknown as [typeof final]
      app.get(route.path, ...chain)
    }
    return client(await listen(createAdaptorServer({ fetch: app.fetch }) as Server), counter)
  },
}

const fastifyReq = (request: FastifyRequest, reply: FastifyReply): Req => ({
  header: (n) => request.headers[n.toLowerCase()] as string | undefined,
  status: () => reply.statusCode,
  local: (n) => (request as unknown as Record<string, unknown>)[n],
})
type FastifyArgs = [FastifyRequest, FastifyReply]
const fastifyCustom = ([, reply]: FastifyArgs, out: Custom) =>
  out.silent ? undefined : reply.code(out.status ?? reply.statusCode).send(out.body)

/**
 * A Fastify middleware: its options (for the plugin) and a hook built from them (checked at once,
 * as the others' middleware are). The first rate limit and the first concurrency limit of an app's
 * `use` are registered as plugins, on every route; the rest, and a route's own, are hooks.
 */
interface FastifyMw {
  kind: 'rateLimit' | 'concurrencyLimit' | 'adaptiveConcurrency'
  options: object
  hook: () => sluiceFastify.RequestHook
  /** Adaptive concurrency's: the hook's, then the plugin's once registered with these options. */
  limiter?: AdaptiveLimiter
}

const FASTIFY_PLUGINS = {
  rateLimit: sluiceFastify.rateLimit,
  concurrencyLimit: sluiceFastify.concurrencyLimit,
  adaptiveConcurrency: sluiceFastify.adaptiveConcurrency,
}

/** Checking options builds a limiter: one the plugin's store must not count as a second user of its policies. */
function quietShared(validate: unknown): unknown {
  if (validate === undefined || validate === true) return { SLUICE_SHARED_POLICY: false }
  return validate !== null && typeof validate === 'object' ? { ...validate, SLUICE_SHARED_POLICY: false } : validate
}

function fastifyMw(kind: Exclude<FastifyMw['kind'], 'adaptiveConcurrency'>, options: Record<string, unknown>): Mw {
  let hook: sluiceFastify.RequestHook | undefined
  if (kind === 'rateLimit') {
    sluiceFastify.rateLimitHook({
      ...options,
      validate: quietShared(options.validate),
    } as sluiceFastify.RateLimitOptions)
  }
  const build = () =>
    kind === 'rateLimit'
      ? sluiceFastify.rateLimitHook(options as sluiceFastify.RateLimitOptions)
      : sluiceFastify.concurrencyLimitHook(options as unknown as sluiceFastify.ConcurrencyLimitOptions)
  if (kind === 'concurrencyLimit') hook = build()
  return mw({ kind, options, hook: () => (hook ??= build()) } satisfies FastifyMw)
}

function fastifyAdaptive(
  options: sluiceFastify.AdaptiveConcurrencyOptions,
): Mw & { readonly limiter: AdaptiveLimiter } {
  const hook = sluiceFastify.adaptiveConcurrencyHook(options)
  const m: FastifyMw = { kind: 'adaptiveConcurrency', options, hook: () => hook, limiter: hook.limiter }
  return m as unknown as Mw & { readonly limiter: AdaptiveLimiter }
}

export const fastifyHarness: Harness = {
  name: 'fastify',
  rateLimit: (options) =>
    fastifyMw('rateLimit', convert<RateOptions, Decision, FastifyArgs, unknown>(options, fastifyReq, fastifyCustom)),
  concurrencyLimit: (options) =>
    fastifyMw(
      'concurrencyLimit',
      convert<ConcurrencyOptions, ConcurrencyInfo, FastifyArgs, unknown>(options, fastifyReq, fastifyCustom),
    ),
  adaptiveConcurrency: (options) => fastifyAdaptive(convertAdaptive(options, fastifyReq, fastifyCustom)),
  async app(spec) {
    const counter = { handled: 0 }
    // trustProxy: true trusts one hop, the loopback peer; Fastify 5.12 ignores a bare hop count.
    const trustProxy = spec.trustProxy === 'all' ? true : spec.trustProxy ? '127.0.0.1' : false
    const app = Fastify({ trustProxy })
    app.setErrorHandler((error: Error, _request, reply) => {
      reply.code(500).send({ error: error.name, message: error.message })
    })
    if (probesTicks(spec)) app.addHook('onRequest', (request, _reply, done) => done(void markFirstTick(request)))
    if (spec.noAddress) {
      app.addHook('onRequest', (request, _reply, done) =>
        done(void Object.defineProperty(request, 'ip', { value: undefined })),
      )
    }
    const plugins = new Set<FastifyMw['kind']>()
    for (const m of (spec.use ?? []) as unknown as FastifyMw[]) {
      if (plugins.has(m.kind)) app.addHook('onRequest', m.hook())
      else {
        plugins.add(m.kind)
        await app.register(FASTIFY_PLUGINS[m.kind] as never, m.options)
        // The plugin learns a limit of its own from these options: the one the test reads.
        if (m.kind === 'adaptiveConcurrency') m.limiter = app.adaptiveConcurrency().limiter
      }
    }
    for (const route of spec.routes) {
      const handler = route.handler ?? 'ok'
      const onRequest = ((route.use ?? []) as unknown as FastifyMw[]).map((m) => m.hook())
      app.get(route.path, { onRequest }, async (request, reply) => {
        counter.handled++
        const bag = request as unknown as Record<string, unknown>
        if (handler === 'ok') return { rateLimit: request.rateLimit ?? null }
        if (handler === 'tick') return { sameTick: inFirstTick.has(request) }
        if (handler === 'throw') throw new Error('handler failed')
        if (handler === 'text') return 'handled'
        if ('status' in handler) return reply.code(handler.status).send({ status: handler.status })
        if ('spend' in handler) {
          bag.unitsUsed = handler.spend
          return { spent: handler.spend }
        }
        if ('properties' in handler)
          return Object.fromEntries(handler.properties.map((name) => [name, bag[name] ?? null]))
        return reply.type('text/plain').send(Readable.from(streamed(handler.stream, handler.entered)))
      })
    }
    await app.listen({ port: 0, host: '127.0.0.1' })
    return client(app.server, counter)
  },
}

export const harnesses: readonly Harness[] = [expressHarness, koaHarness, honoHarness, fastifyHarness]
