import {
  type Adapter,
  type ConcurrencyInfo,
  type ConcurrencyPlan,
  type ConcurrencyLimitOptions as CoreConcurrencyOptions,
  type RateLimitOptions as CoreRateLimitOptions,
  createConcurrencyHandler,
  createRateLimitHandler,
  type Decision,
  type HeaderEntry,
  type Limiter,
  onResponseDone,
  type RateLimitPlan,
  type ResponseBody,
  whenReady,
} from '@sluice/core'
import type { NextFunction, Request, RequestHandler, Response } from 'express'

declare global {
  namespace Express {
    interface Request {
      /** The rate-limit decision for this request, set by `@sluice/express`'s `rateLimit()`. */
      rateLimit?: Decision
    }
  }
}

type Args = [req: Request, res: Response]
export type RateLimitOptions = CoreRateLimitOptions<Args, unknown>
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, unknown>
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { ConcurrencyInfo, Decision }

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
    // res.append reads the header back and goes through res.set: only stack when there is one.
    if (append && res.hasHeader(name)) res.append(name, value)
    else res.setHeader(name, value)
  }
}

async function deny(
  res: Response,
  status: number,
  headers: readonly HeaderEntry[],
  response: ResponseBody | (() => unknown),
) {
  res.status(status)
  writeHeaders(res, headers)
  if (typeof response === 'function') await response()
  else {
    if (!res.headersSent) res.setHeader('Content-Type', response.contentType)
    res.end(response.text)
  }
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapter)
  const apply = (req: Request, res: Response, next: NextFunction, plan: RateLimitPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    req.rateLimit = plan.decision
    if (plan.kind === 'continue') {
      writeHeaders(res, plan.headers)
      if (plan.settle) onResponseDone(res, plan.settle)
      return next()
    }
    return deny(res, plan.status, plan.headers, plan.response)
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
    if (plan.kind === 'deny') return deny(res, plan.status, plan.headers, plan.response)
    writeHeaders(res, plan.headers)
    // The release itself runs once.
    onResponseDone(res, plan.release)
    return next()
  }
  return (req, res, next) => whenReady(handler.plan(req, res), (plan) => apply(res, next, plan), next)
}
