import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { ActiveClients, AdaptiveLimiter, CheckedLimits, Decision, Limiter } from '@sluice/core'
import type {
  AdmissionState,
  ConcurrencyInfo,
  AdaptiveConcurrencyOptions as CoreAdaptiveOptions,
  AdmissionControlOptions as CoreAdmissionOptions,
  ConcurrencyLimitOptions as CoreConcurrencyOptions,
  RateLimitOptions as CoreRateLimitOptions,
  HeaderEntry,
  NodeEventLoopDelay,
} from '@sluice/core/adapter'
import {
  type Adapter,
  type AdaptivePlan,
  type AdmissionPlan,
  andThen,
  type ConcurrencyPlan,
  createAdaptiveHandler,
  createAdmissionHandler,
  createConcurrencyHandler,
  createRateLimitHandler,
  type DenyPlan,
  lowerCaseName,
  onResponseDone,
  type RateLimitPlan,
  withEventLoopHistogram,
} from '@sluice/core/adapter'
import type { Context, Middleware, Next, ParameterizedContext } from 'koa'

type Args = [ctx: Context]
/** `rateLimit()` options: the limiter's (`limits`, `store`, …) and the middleware's (`key`, `headers`, …). */
export type RateLimitOptions = CoreRateLimitOptions<Args, unknown>
/** `concurrencyLimit()` options: `limit`, `key`, `statusCode`, `name`, `headers`, …. */
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, unknown>
/** `admissionControl()` options: `maxActive`, `window`, `slots`, `key`, `sync`, `statusCode`, …. */
export type AdmissionControlOptions = CoreAdmissionOptions<Args, unknown>
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { AdmissionInfo } from '@sluice/core/adapter'
/**
 * `adaptiveConcurrency()` options: `algorithm`, `min`, `max`, `classes`, `priority`, `queue`,
 * `statusCode` (default 503), …; `eventLoopDelay` needs only a `threshold` (the histogram is made here).
 */
export type AdaptiveConcurrencyOptions = Omit<CoreAdaptiveOptions<Args, unknown>, 'eventLoopDelay'> & {
  eventLoopDelay?: NodeEventLoopDelay
}
export type { OverloadInfo } from '@sluice/core/adapter'
export type { AdmissionState, ConcurrencyInfo, Decision }

/** What `rateLimit()` adds to `ctx.state`. */
export interface RateLimitState {
  /** The rate-limit decision for this request (absent when `skip` let it through). */
  rateLimit?: Decision
}

// Types `ctx.state.rateLimit` on a plain `new Koa()`.
declare module 'koa' {
  interface DefaultState {
    /** The rate-limit decision for this request, set by `@sluice/koa`'s `rateLimit()` (absent when skipped). */
    rateLimit?: Decision
    /** Throttling mode, the active-client estimate and whether this client was known: `admissionControl()`. */
    admission?: AdmissionState
  }
}

/** What `rateLimit()` returns: a Koa middleware that also exposes its limiter. */
export type RateLimitMiddleware = Middleware<RateLimitState> & {
  /**
   * The limiter behind the middleware: `peek`, `reset` and `consume` by key. Undefined when the
   * `limiter` option is a function of the request (keep your own references to its limiters).
   */
  readonly limiter: Limiter | undefined
}

// `ctx.ip` follows `app.proxy`, `proxyIpHeader` and `maxIpsCount`; '' when the socket is gone.
const adapter: Adapter<Args> = {
  name: '@sluice/koa',
  addressSource: 'ctx.ip',
  address: (ctx) => ctx.ip || undefined,
  status: (ctx) => ctx.status,
  proxy: {
    // With proxy on and no maxIpsCount, ctx.ip is the left-most X-Forwarded-For entry.
    trust: ({ app }) => (!app.proxy ? 'ignored' : app.maxIpsCount > 0 ? 'hops' : 'any'),
    forwarded: (ctx) => ctx.get(ctx.app.proxyIpHeader) !== '',
    setting: "Koa's app.proxy",
    advice: 'new Koa({ proxy: true, maxIpsCount: n }) with n the number of proxies',
  },
}

/**
 * `ctx.set`'s checks (a started response, a header name, a string value) without the arrays and
 * closures it allocates per call; `ctx.append` only when there is a header to stack on (looked
 * up by its lower-case name, which Node does not lower-case again; the name sent keeps its case).
 */
function writeHeaders(ctx: Context, headers: readonly HeaderEntry[]): void {
  if (ctx.headerSent) return
  for (const { name, value, append } of headers) {
    if (append && ctx.res.hasHeader(lowerCaseName(name))) ctx.append(name, value)
    else ctx.res.setHeader(name, value)
  }
}

async function deny(ctx: Context, { status, headers, response, fallback }: DenyPlan<unknown>) {
  ctx.status = status
  writeHeaders(ctx, headers)
  if (typeof response === 'function') {
    try {
      await response()
    } catch (error) {
      throw keepingHeaders(ctx, headers, error)
    }
    // An onLimited that set no body: send the default denial, as Express and Hono do.
    if (ctx.body !== undefined && ctx.body !== null) return
    if (ctx.headerSent || ctx.respond === false) return
  }
  const body = typeof response === 'function' ? fallback : response
  // Set first: Koa only guesses a Content-Type for a body when none is set.
  ctx.set('Content-Type', body.contentType)
  ctx.body = body.text
}

/**
 * Koa's error handling removes every header before it answers a thrown error, and sets only the
 * error's own `headers`: an onLimited that calls ctx.throw(429) would lose Retry-After and the
 * rate-limit headers. They go onto the error (its own headers win), as the response holds them.
 */
function keepingHeaders(ctx: Context, headers: readonly HeaderEntry[], error: unknown): unknown {
  if (error === null || typeof error !== 'object') return error
  const carried: Record<string, string> = {}
  for (const { name } of headers) {
    const value = ctx.res.getHeader(name)
    if (value !== undefined) carried[name] = Array.isArray(value) ? value.join(', ') : String(value)
  }
  const own = (error as { headers?: Record<string, string> }).headers
  ;(error as { headers?: Record<string, string> }).headers = { ...carried, ...own }
  return error
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit<const L extends RateLimitOptions['limits'] = RateLimitOptions['limits']>(
  options: RateLimitOptions & { limits?: L & CheckedLimits<L> },
): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapter)
  const { property } = handler
  const apply = (ctx: ParameterizedContext<RateLimitState>, next: Next, plan: RateLimitPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    ;(ctx.state as Record<string, Decision>)[property] = plan.decision
    if (plan.kind === 'deny') return deny(ctx, plan)
    writeHeaders(ctx, plan.headers)
    // On the response, not after next(): a streamed body and the error handler's status come later.
    if (plan.settle) onResponseDone(ctx.res, plan.settle)
    return next()
  }
  // Not async: a plan made synchronously (memory store) goes on in the same tick, and koa-compose
  // turns a throw into a rejection.
  const middleware: Middleware<RateLimitState> = (ctx, next) =>
    andThen(handler.plan(ctx), (plan) => apply(ctx, next, plan))
  return Object.assign(middleware, { limiter: handler.limiter })
}

/** At most `limit` requests in flight per key; a slot is freed when the response finishes or the client leaves. */
export function concurrencyLimit(options: ConcurrencyLimitOptions): Middleware {
  const handler = createConcurrencyHandler(options, adapter)
  const apply = (ctx: Context, next: Next, plan: ConcurrencyPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(ctx, plan)
    writeHeaders(ctx, plan.headers)
    // The response outlives this middleware when the body is a stream: free the slot only when
    // it is written or abandoned; the release itself runs once.
    onResponseDone(ctx.res, plan.release)
    return next()
  }
  return (ctx, next) => andThen(handler.plan(ctx), (plan) => apply(ctx, next, plan))
}

/** What `admissionControl()` adds to `ctx.state`. */
export interface AdmissionControlState {
  /** Throttling mode, the active-client estimate and whether this client was known (absent when skipped). */
  admission?: AdmissionState
}

/** What `admissionControl()` returns: the middleware, which also exposes its `clients`. */
export type AdmissionMiddleware = Middleware<AdmissionControlState> & {
  /** The clients seen within the window, behind the middleware (`has`, `size`). */
  readonly clients: ActiveClients
}

/**
 * Throttling mode: once more than `maxActive` clients were active within the window, only those
 * already seen are served; new ones get 429. `app.use(admissionControl({ maxActive: 10_000 }))`.
 */
export function admissionControl(options: AdmissionControlOptions): AdmissionMiddleware {
  const handler = createAdmissionHandler(options, adapter)
  const apply = (ctx: ParameterizedContext<AdmissionControlState>, next: Next, plan: AdmissionPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    ctx.state.admission = plan.state
    if (plan.kind === 'deny') return deny(ctx, plan)
    return next()
  }
  const middleware: Middleware<AdmissionControlState> = (ctx, next) =>
    andThen(handler.plan(ctx), (plan) => apply(ctx, next, plan))
  return Object.assign(middleware, { clients: handler.clients })
}

/** What `adaptiveConcurrency()` returns: the middleware, which also exposes its limiter (`limit`, `stats()`). */
export type AdaptiveConcurrencyMiddleware = Middleware & { readonly limiter: AdaptiveLimiter }

/**
 * A concurrency limit for the whole service, learned from the latency of the requests it
 * admits; over it, requests wait briefly (most critical class first) and are then refused with
 * 503 and Retry-After. `app.use(adaptiveConcurrency({ classes: ['critical', 'default'], priority }))`.
 */
export function adaptiveConcurrency(options: AdaptiveConcurrencyOptions = {}): AdaptiveConcurrencyMiddleware {
  const handler = createAdaptiveHandler(withEventLoopHistogram(options, monitorEventLoopDelay), adapter)
  const apply = (ctx: Context, next: Next, plan: AdaptivePlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(ctx, plan)
    writeHeaders(ctx, plan.headers)
    // The response outlives this middleware when the body is a stream: free the slot (and take
    // the latency sample) only when it is written or abandoned.
    onResponseDone(ctx.res, plan.release)
    return next()
  }
  const middleware: Middleware = (ctx, next) => andThen(handler.plan(ctx), (plan) => apply(ctx, next, plan))
  return Object.assign(middleware, { limiter: handler.limiter })
}
