// One request hook per kind of limit, each a thin translation of core's request planner: read the
// request, write the plan through `reply`.
import type { ActiveClients, Decision, Limiter } from '@sluice/core'
import type {
  AdmissionState,
  AdmissionControlOptions as CoreAdmissionOptions,
  ConcurrencyLimitOptions as CoreConcurrencyOptions,
  RateLimitOptions as CoreRateLimitOptions,
  HeaderEntry,
} from '@sluice/core/adapter'
import {
  type Adapter,
  type AdmissionPlan,
  type ConcurrencyPlan,
  createAdmissionHandler,
  createConcurrencyHandler,
  createRateLimitHandler,
  type DenyPlan,
  lowerCaseName,
  onResponseDone,
  type RateLimitPlan,
  type ResponseBody,
  whenReady,
} from '@sluice/core/adapter'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'

export type Args = [request: FastifyRequest, reply: FastifyReply]
/** Options of a rate limit: the limiter's (`limits`, `store`, …) and the hook's (`key`, `headers`, …). */
export type RateLimitOptions = CoreRateLimitOptions<Args, unknown>
/** Options of a concurrency limit: `limit`, `key`, `statusCode`, `name`, `headers`, …. */
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, unknown>
/** Options of admission control: `maxActive`, `window`, `slots`, `key`, `sync`, `statusCode`, …. */
export type AdmissionControlOptions = CoreAdmissionOptions<Args, unknown>

/** A hook for `onRequest`, `preValidation` or `preHandler` (they share this signature). */
export type RequestHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

/** A rate-limit hook, which also exposes its limiter. */
export interface RateLimitHook extends RequestHook {
  /**
   * The limiter behind the hook: `peek`, `reset` and `consume` by key. Undefined when the
   * `limiter` option is a function of the request (keep your own references to its limiters).
   */
  readonly limiter: Limiter | undefined
}

/** An admission-control hook, which also exposes its `clients`. */
export interface AdmissionHook extends RequestHook {
  /** The clients seen within the window, behind the hook (`has`, `size`). */
  readonly clients: ActiveClients
}

/** Fastify keeps its factory options under a symbol it does not export; found once per instance. */
function trustProxySetting(server: FastifyInstance): unknown {
  for (let object: object | null = server; object !== null; object = Object.getPrototypeOf(object)) {
    const symbol = Object.getOwnPropertySymbols(object).find((s) => s.description === 'fastify.options')
    if (symbol !== undefined) return (object as Record<symbol, { trustProxy?: unknown }>)[symbol]?.trustProxy
  }
  return undefined
}

// `request.ip` follows the factory's `trustProxy`; Fastify gives a request `ips` only when it is set.
export const adapter: Adapter<Args> = {
  name: '@sluice/fastify',
  addressSource: 'request.ip',
  address: (request) => request.ip,
  status: (_request, reply) => reply.statusCode,
  proxy: {
    trust(request) {
      if (request.ips === undefined) return 'ignored'
      return trustProxySetting(request.server) === true ? 'any' : 'hops'
    },
    forwarded: (request) => request.headers['x-forwarded-for'] !== undefined,
    setting: "Fastify's trustProxy",
    advice: "Fastify({ trustProxy: '10.0.0.1' }) with your proxies' addresses (a string, CIDR list or function)",
  },
}

/** `done` takes what a hook failed with to Fastify's error handler. */
type Fail = (error: unknown) => void

/** Once the response has started its headers are gone: skip them, as the other adapters do. */
function writeHeaders(reply: FastifyReply, headers: readonly HeaderEntry[]): void {
  if (reply.sent) return
  for (const { name, value, append } of headers) {
    // reply.header replaces: a stacked limiter's list member goes after the one already there.
    // It lower-cases every name; one already in lower case costs it no new string: bench:http-
    // instructions' Fastify row "sluice, 1 policy" went from 19.9k to 14.9k instructions a
    // request beyond the hello world (bench/README.md, issue 37).
    const key = lowerCaseName(name)
    const before = append ? reply.getHeader(key) : undefined
    reply.header(key, before === undefined ? value : `${String(before)}, ${value}`)
  }
}

/** The body as written, its type as given: Fastify would add a charset to a JSON type. */
function sendBody(reply: FastifyReply, { contentType, text }: ResponseBody): FastifyReply {
  return reply.type(contentType).serializer(asWritten).send(text)
}
const asWritten = (text: unknown): string => text as string

/**
 * Status and headers, then the body through `reply`. A user's onLimited may answer through
 * `reply` itself, or throw (or reject) to reach Fastify's error handler, which keeps the headers
 * set here; one that answers nothing gets the default denial, so a request never hangs.
 */
function deny(reply: FastifyReply, plan: DenyPlan<unknown>, done: HookHandlerDoneFunction): unknown {
  const { status, headers, response, fallback } = plan
  reply.code(status)
  writeHeaders(reply, headers)
  if (typeof response !== 'function') return sendBody(reply, response)
  const answered = (): void => {
    if (!reply.sent) sendBody(reply.code(status), fallback)
  }
  const result = response()
  if (result instanceof Error) return done(result)
  // A reply is thenable too, but settles only once sent: an onLimited that returns it unsent would hang.
  if (
    result !== reply &&
    result !== null &&
    typeof result === 'object' &&
    typeof (result as Promise<unknown>).then === 'function'
  ) {
    return (result as Promise<unknown>).then(
      (value) => (value instanceof Error ? done(value) : answered()),
      done as Fail,
    )
  }
  return answered()
}

/** The hook of one rate limit, built (and its options checked) at once. */
export function rateLimitHook(options: RateLimitOptions): RateLimitHook {
  const handler = createRateLimitHandler(options, adapter)
  const { property } = handler
  const apply = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    plan: RateLimitPlan<unknown>,
  ) => {
    if (plan.kind === 'skip') return done()
    ;(request as unknown as Record<string, Decision>)[property] = plan.decision
    if (plan.kind === 'deny') return deny(reply, plan, done)
    writeHeaders(reply, plan.headers)
    if (plan.settle) onResponseDone(reply.raw, plan.settle)
    return done()
  }
  // Callback style, not async: a plan made synchronously (memory store) goes on in the same tick.
  const hook: RequestHook = function sluiceRateLimit(request, reply, done) {
    whenReady(handler.plan(request, reply), (plan) => apply(request, reply, done, plan), done as Fail)
  }
  return Object.assign(hook, { limiter: handler.limiter })
}

/** The hook of one concurrency limit: a slot is freed when the response finishes or the client leaves. */
export function concurrencyLimitHook(options: ConcurrencyLimitOptions): RequestHook {
  const handler = createConcurrencyHandler(options, adapter)
  const apply = (reply: FastifyReply, done: HookHandlerDoneFunction, plan: ConcurrencyPlan<unknown>) => {
    if (plan.kind === 'skip') return done()
    if (plan.kind === 'deny') return deny(reply, plan, done)
    writeHeaders(reply, plan.headers)
    onResponseDone(reply.raw, plan.release)
    return done()
  }
  return function sluiceConcurrencyLimit(request, reply, done) {
    whenReady(handler.plan(request, reply), (plan) => apply(reply, done, plan), done as Fail)
  }
}

/** The hook of admission control (throttling mode). */
export function admissionControlHook(options: AdmissionControlOptions): AdmissionHook {
  const handler = createAdmissionHandler(options, adapter)
  const apply = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
    plan: AdmissionPlan<unknown>,
  ) => {
    if (plan.kind === 'skip') return done()
    request.admission = plan.state
    if (plan.kind === 'deny') return deny(reply, plan, done)
    return done()
  }
  const hook: RequestHook = function sluiceAdmissionControl(request, reply, done) {
    whenReady(handler.plan(request, reply), (plan) => apply(request, reply, done, plan), done as Fail)
  }
  return Object.assign(hook, { clients: handler.clients })
}

export type { AdmissionState }
