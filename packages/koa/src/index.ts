import {
  type Adapter,
  andThen,
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
} from '@sluice/core'
import type { Context, Middleware, Next, ParameterizedContext } from 'koa'

type Args = [ctx: Context]
export type RateLimitOptions = CoreRateLimitOptions<Args, unknown>
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, unknown>
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { ConcurrencyInfo, Decision }

/** What `rateLimit()` adds to `ctx.state`. */
export interface RateLimitState {
  /** The rate-limit decision for this request (absent when `skip` let it through). */
  rateLimit?: Decision
}

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
 * closures it allocates per call; `ctx.append` only when there is a header to stack on.
 */
function writeHeaders(ctx: Context, headers: readonly HeaderEntry[]): void {
  if (ctx.headerSent) return
  for (const { name, value, append } of headers) {
    if (append && ctx.res.hasHeader(name)) ctx.append(name, value)
    else ctx.res.setHeader(name, value)
  }
}

async function deny(
  ctx: Context,
  status: number,
  headers: readonly HeaderEntry[],
  response: ResponseBody | (() => unknown),
) {
  ctx.status = status
  writeHeaders(ctx, headers)
  if (typeof response === 'function') {
    await response()
    return
  }
  // Set first: Koa only guesses a Content-Type for a body when none is set.
  ctx.set('Content-Type', response.contentType)
  ctx.body = response.text
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapter)
  const apply = (ctx: ParameterizedContext<RateLimitState>, next: Next, plan: RateLimitPlan<unknown>) => {
    if (plan.kind === 'skip') return next()
    ctx.state.rateLimit = plan.decision
    if (plan.kind === 'deny') return deny(ctx, plan.status, plan.headers, plan.response)
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
    if (plan.kind === 'deny') return deny(ctx, plan.status, plan.headers, plan.response)
    writeHeaders(ctx, plan.headers)
    // The response outlives this middleware when the body is a stream: free the slot only when
    // it is written or abandoned; the release itself runs once.
    onResponseDone(ctx.res, plan.release)
    return next()
  }
  return (ctx, next) => andThen(handler.plan(ctx), (plan) => apply(ctx, next, plan))
}
