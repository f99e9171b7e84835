import {
  type Adapter,
  type ConcurrencyInfo,
  ConfigError,
  type ConcurrencyLimitOptions as CoreConcurrencyOptions,
  type RateLimitOptions as CoreRateLimitOptions,
  createConcurrencyHandler,
  createRateLimitHandler,
  type Decision,
  type HeaderEntry,
  isThenable,
  type Limiter,
  onStreamDone,
  type ResponseBody,
} from '@sluice/core'
import type { Context, MiddlewareHandler } from 'hono'
import type { GetConnInfo } from 'hono/conninfo'

type Args = [c: Context]
type Awaitable<T> = T | Promise<T>

interface AddressOptions {
  /**
   * The runtime's connection info, e.g. `getConnInfo` from `hono/bun`, `hono/deno` or
   * `@hono/node-server/conninfo`, for the default key. Default: detected (see `clientAddress`).
   */
  getConnInfo?: GetConnInfo
}
export type RateLimitOptions = CoreRateLimitOptions<Args, Awaitable<Response>> & AddressOptions
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, Awaitable<Response>> & AddressOptions
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { ConcurrencyInfo, Decision }

/** The variables `rateLimit()` sets: type your app with `new Hono<{ Variables: RateLimitVariables }>()`. */
export interface RateLimitVariables {
  /** The rate-limit decision for this request (undefined when `skip` let it through). */
  rateLimit: Decision | undefined
}

export type RateLimitMiddleware = MiddlewareHandler<{ Variables: RateLimitVariables }> & {
  /**
   * The limiter behind the middleware: `peek`, `reset` and `consume` by key. Undefined when the
   * `limiter` option is a function of the request (keep your own references to its limiters).
   */
  readonly limiter: Limiter | undefined
}

interface RuntimeEnv {
  /** @hono/node-server */
  incoming?: { socket?: { remoteAddress?: string }; headers?: Record<string, string | string[] | undefined> }
  /** Deno.serve's ServeHandlerInfo */
  remoteAddr?: { hostname?: string }
  /** Bun.serve's Server */
  requestIP?: (request: Request) => { address?: string } | null
}

/**
 * The connection's peer address where the runtime tells us: Node (@hono/node-server), Deno, Bun,
 * and Cloudflare Workers, whose edge sets `cf-connecting-ip`. That header is trusted only on
 * Cloudflare's own runtime: anywhere else a client can send it. No forwarding header is read.
 */
export function clientAddress(c: Context): string | undefined {
  const env = (c.env ?? {}) as RuntimeEnv
  if (env.incoming?.socket) return env.incoming.socket.remoteAddress
  if (env.remoteAddr) return env.remoteAddr.hostname
  if (typeof env.requestIP === 'function') return env.requestIP(c.req.raw)?.address ?? undefined
  if (onCloudflare(c)) return c.req.header('cf-connecting-ip')
  return undefined
}

function onCloudflare(c: Context): boolean {
  const { navigator } = globalThis as { navigator?: { userAgent?: string } }
  const { cf } = c.req.raw as { cf?: unknown }
  return navigator?.userAgent === 'Cloudflare-Workers' || (typeof cf === 'object' && cf !== null)
}

/**
 * Whether a proxy forwarded the request (Cloudflare's own edge aside). On Node, from the parsed
 * headers: c.req.header() makes @hono/node-server build the request's whole Headers.
 */
function forwarded(c: Context): boolean {
  const headers = (c.env as RuntimeEnv | undefined)?.incoming?.headers
  if (headers) return headers['x-forwarded-for'] !== undefined
  return !onCloudflare(c) && c.req.header('x-forwarded-for') !== undefined
}

function adapterFor(options: AddressOptions): Adapter<Args> {
  const { getConnInfo } = options
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    throw new ConfigError('getConnInfo', getConnInfo, "must be a function such as getConnInfo from 'hono/bun'")
  }
  return {
    name: '@sluice/hono',
    addressSource: getConnInfo ? 'getConnInfo(c).remote.address' : "the runtime's connection info",
    address: getConnInfo ? (c) => getConnInfo(c).remote.address : clientAddress,
    status: (c) => c.res.status,
    extraOptions: ['getConnInfo'],
    // Hono has no proxy setting: its address is the connection's, or Cloudflare's CF-Connecting-IP.
    proxy: {
      trust: () => 'ignored',
      forwarded,
      setting: 'Hono (the runtime reports the connection peer)',
      advice: 'pass key: (c) => ipKey(<the address your proxy appends to X-Forwarded-For>)',
    },
  }
}

const APPEND = { append: true }

function writeHeaders(c: Context, headers: readonly HeaderEntry[]): void {
  for (const { name, value, append } of headers) c.header(name, value, append ? APPEND : undefined)
}

async function deny(
  c: Context,
  status: number,
  headers: readonly HeaderEntry[],
  response: ResponseBody | (() => Awaitable<Response>),
): Promise<Response> {
  c.status(status as 429)
  writeHeaders(c, headers)
  if (typeof response !== 'function')
    return c.body(response.text, status as 429, { 'Content-Type': response.contentType })
  const res = await response()
  // Anything else would leave Hono's default 200, or fail deep inside Hono.
  if (!(res instanceof Response)) {
    throw new ConfigError('onLimited', res, 'must return a Response, such as c.json(body, 429) or c.text(text, 429)')
  }
  c.res = res
  addMissingHeaders(c, headers)
  return c.res
}

/**
 * A Response built by hand (not with c.json, c.text or c.body) lacks the headers set on the
 * context beforehand. Touching the response only then keeps @hono/node-server on its fast path,
 * which a header written after the handler would leave (about 3× the CPU per request).
 */
function addMissingHeaders(c: Context, headers: readonly HeaderEntry[]): void {
  // Even reading c.res.headers makes @hono/node-server build them and leave its fast path.
  if (headers.length === 0) return
  const present = c.res.headers
  let missing: HeaderEntry[] | undefined
  for (const header of headers) {
    if (present.has(header.name)) continue
    missing ??= []
    missing.push(header)
  }
  if (missing) writeHeaders(c, missing)
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapterFor(options))
  const middleware: MiddlewareHandler<{ Variables: RateLimitVariables }> = async (c, next) => {
    const planned = handler.plan(c)
    // Awaiting a plan made synchronously (memory store) would still cost a microtask.
    const plan = isThenable(planned) ? await planned : planned
    if (plan.kind === 'skip') return next()
    c.set('rateLimit', plan.decision)
    if (plan.kind === 'deny') return deny(c, plan.status, plan.headers, plan.response)
    writeHeaders(c, plan.headers)
    try {
      await next()
    } catch (error) {
      plan.settle?.(false)
      throw error
    }
    // Hono hands a handler's error to onError and resolves next() with c.error set.
    plan.settle?.(c.error === undefined)
    addMissingHeaders(c, plan.headers)
  }
  return Object.assign(middleware, { limiter: handler.limiter })
}

/**
 * At most `limit` requests in flight per key. The slot is freed when the handler is done, or,
 * for a response with a body, when the body has been sent or cancelled by a client that left.
 */
export function concurrencyLimit(options: ConcurrencyLimitOptions): MiddlewareHandler {
  const handler = createConcurrencyHandler(options, adapterFor(options))
  return async (c, next) => {
    const planned = handler.plan(c)
    const plan = isThenable(planned) ? await planned : planned
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(c, plan.status, plan.headers, plan.response)
    let handedOver = false
    try {
      writeHeaders(c, plan.headers)
      await next()
      addMissingHeaders(c, plan.headers)
      const { body } = c.res
      // Hono answers HEAD by running the GET route and dropping its body unread: release now.
      if (body && c.req.method !== 'HEAD') {
        c.res = new Response(onStreamDone(body, plan.release), c.res)
        handedOver = true
      }
    } finally {
      if (!handedOver) plan.release()
    }
  }
}
