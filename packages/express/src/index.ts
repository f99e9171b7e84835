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
  type ConcurrencyPlan,
  createAdaptiveHandler,
  createAdmissionHandler,
  createConcurrencyHandler,
  createRateLimitHandler,
  type DenyPlan,
  lowerCaseName,
  onResponseDone,
  type RateLimitPlan,
  whenReady,
  withEventLoopHistogram,
} from '@sluice/core/adapter'
import type { NextFunction, Request, RequestHandler, Response } from 'express'

// `req.rateLimit` is not declared globally: an app still using express-rate-limit declares it as
// that library's `RateLimitInfo`, and two global declarations of one property cannot agree.
// `rateLimitOf(req)` reads it typed; `RateLimitRequest` is there for an app that opts in.
declare global {
  namespace Express {
    interface Request {
      /** Throttling mode, the active-client estimate and whether this client was known: `admissionControl()`. */
      admission?: AdmissionState
    }
  }
}

/**
 * `req.rateLimit` typed, for an app that no longer uses express-rate-limit anywhere:
 * `declare global { namespace Express { interface Request extends RateLimitRequest {} } }`.
 */
export interface RateLimitRequest {
  /** The rate-limit decision for this request, set by `rateLimit()`. */
  rateLimit?: Decision
}

/**
 * The decision `rateLimit()` made for this request, typed: `rateLimitOf(req)?.remaining`.
 * `name` is the middleware's `requestPropertyName` (default `'rateLimit'`). Undefined when no
 * `rateLimit()` ran, or `skip` let the request through.
 */
export function rateLimitOf(req: Request, name = 'rateLimit'): Decision | undefined {
  return (req as unknown as Record<string, Decision | undefined>)[name]
}

type Args = [req: Request, res: Response]
/** `rateLimit()` options: the limiter's (`limits`, `store`, …) and the middleware's (`key`, `headers`, …). */
export type RateLimitOptions = CoreRateLimitOptions<Args, unknown>
/** `concurrencyLimit()` options: `limit`, `key`, `statusCode`, `name`, `headers`, …. */
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, unknown>
/** `admissionControl()` options: `maxActive`, `window`, `slots`, `key`, `sync`, `statusCode`, …. */
export type AdmissionControlOptions = CoreAdmissionOptions<Args, unknown>
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
/**
 * `adaptiveConcurrency()` options: `algorithm`, `min`, `max`, `classes`, `priority`, `queue`,
 * `statusCode` (default 503), …; `eventLoopDelay` needs only a `threshold` (the histogram is made here).
 */
export type AdaptiveConcurrencyOptions = Omit<CoreAdaptiveOptions<Args, unknown>, 'eventLoopDelay'> & {
  eventLoopDelay?: NodeEventLoopDelay
}
export type { AdmissionInfo, OverloadInfo } from '@sluice/core/adapter'
export type { AdmissionState, ConcurrencyInfo, Decision }

/** What `rateLimit()` returns: an Express handler that also exposes its limiter. */
export interface RateLimitMiddleware extends RequestHandler {
  /**
   * The limiter behind the middleware: `peek`, `reset` and `consume` by key. Undefined when the
   * `limiter` option is a function of the request (keep your own references to its limiters).
   */
  readonly limiter: Limiter | undefined
}

// `req.ip` follows the app's `trust proxy` setting; it is undefined once the socket is gone.
const adapter: Adapter<Args> = {
  name: '@sluice/express',
  addressSource: 'req.ip',
  address: (req) => req.ip,
  status: (_req, res) => res.statusCode,
  proxy: {
    trust(req) {
      const setting: unknown = req.app.get('trust proxy')
      return setting === true ? 'any' : setting ? 'hops' : 'ignored'
    },
    forwarded: (req) => req.headers['x-forwarded-for'] !== undefined,
    setting: "Express's 'trust proxy'",
    advice: "app.set('trust proxy', n) with n the number of proxies, or their addresses",
  },
}

/** Once the response has started its headers are gone: skip them, as Koa's `ctx.set` does. */
function writeHeaders(res: Response, headers: readonly HeaderEntry[]): void {
  if (res.headersSent) return
  for (const { name, value, append } of headers) {
    // res.append reads the header back and goes through res.set: only stack when there is one
    // (looked up by its lower-case name, which Node does not lower-case again; the name sent keeps its case).
    if (append && res.hasHeader(lowerCaseName(name))) res.append(name, value)
    else res.setHeader(name, value)
  }
}

async function deny(res: Response, { status, headers, response, fallback }: DenyPlan<unknown>) {
  res.status(status)
  writeHeaders(res, headers)
  if (typeof response === 'function') {
    await response()
    // An onLimited that sent nothing would leave the request hanging: send the default denial.
    if (res.headersSent || res.writableEnded) return
  }
  const body = typeof response === 'function' ? fallback : response
  if (!res.headersSent) res.setHeader('Content-Type', body.contentType)
  res.end(body.text)
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit<const L extends RateLimitOptions['limits'] = RateLimitOptions['limits']>(
  options: RateLimitOptions & { limits?: L & CheckedLimits<L> },
): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapter)
  const { property } = handler
  const apply = (req: Request, res: Response, next: NextFunction, plan: RateLimitPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    ;(req as unknown as Record<string, Decision>)[property] = plan.decision
    if (plan.kind === 'continue') {
      writeHeaders(res, plan.headers)
      if (plan.settle) onResponseDone(res, plan.settle)
      return next()
    }
    return deny(res, plan)
  }
  // A plan made synchronously (memory store) is applied in the same tick: Express charges an
  // asynchronous next() far more than a synchronous one.
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    whenReady(handler.plan(req, res), (plan) => apply(req, res, next, plan), next)
  }
  return Object.assign(middleware, { limiter: handler.limiter })
}

/** At most `limit` requests in flight per key; a slot is freed when the response finishes or the client leaves. */
export function concurrencyLimit(options: ConcurrencyLimitOptions): RequestHandler {
  const handler = createConcurrencyHandler(options, adapter)
  const apply = (res: Response, next: NextFunction, plan: ConcurrencyPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(res, plan)
    writeHeaders(res, plan.headers)
    // The release itself runs once.
    onResponseDone(res, plan.release)
    return next()
  }
  return (req, res, next) => whenReady(handler.plan(req, res), (plan) => apply(res, next, plan), next)
}

/** What `admissionControl()` returns: the middleware, which also exposes its `clients`. */
export interface AdmissionMiddleware extends RequestHandler {
  /** The clients seen within the window, behind the middleware (`has`, `size`). */
  readonly clients: ActiveClients
}

/**
 * Throttling mode: once more than `maxActive` clients were active within the window, only those
 * already seen are served; new ones get 429. `app.use(admissionControl({ maxActive: 10_000 }))`.
 */
export function admissionControl(options: AdmissionControlOptions): AdmissionMiddleware {
  const handler = createAdmissionHandler(options, adapter)
  const apply = (req: Request, res: Response, next: NextFunction, plan: AdmissionPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    req.admission = plan.state
    if (plan.kind === 'continue') return next()
    return deny(res, plan)
  }
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    whenReady(handler.plan(req, res), (plan) => apply(req, res, next, plan), next)
  }
  return Object.assign(middleware, { clients: handler.clients })
}

/** What `adaptiveConcurrency()` returns: the middleware, which also exposes its limiter (`limit`, `stats()`). */
export interface AdaptiveConcurrencyMiddleware extends RequestHandler {
  readonly limiter: AdaptiveLimiter
}

/**
 * A concurrency limit for the whole service, learned from the latency of the requests it
 * admits; over it, requests wait briefly (most critical class first) and are then refused with
 * 503 and Retry-After. `app.use(adaptiveConcurrency({ classes: ['critical', 'default'], priority }))`.
 * The slot is freed when the response finishes or the client leaves.
 */
export function adaptiveConcurrency(options: AdaptiveConcurrencyOptions = {}): AdaptiveConcurrencyMiddleware {
  const handler = createAdaptiveHandler(withEventLoopHistogram(options, monitorEventLoopDelay), adapter)
  const apply = (res: Response, next: NextFunction, plan: AdaptivePlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(res, plan)
    writeHeaders(res, plan.headers)
    onResponseDone(res, plan.release)
    return next()
  }
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    whenReady(handler.plan(req, res), (plan) => apply(res, next, plan), next)
  }
  return Object.assign(middleware, { limiter: handler.limiter })
}
