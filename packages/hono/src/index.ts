import {
  type ActiveClients,
  type AdaptiveLimiter,
  type CheckedLimits,
  ConfigError,
  type Decision,
  type Limiter,
} from '@sluice/core'
import {
  type Adapter,
  type AdmissionState,
  type ConcurrencyInfo,
  type AdaptiveConcurrencyOptions as CoreAdaptiveOptions,
  type AdmissionControlOptions as CoreAdmissionOptions,
  type ConcurrencyLimitOptions as CoreConcurrencyOptions,
  type RateLimitOptions as CoreRateLimitOptions,
  createAdaptiveHandler,
  createAdmissionHandler,
  createConcurrencyHandler,
  createRateLimitHandler,
  type DenyPlan,
  type HeaderEntry,
  isThenable,
  lowerCaseName,
  onStreamDone,
  type ResponseBody,
} from '@sluice/core/adapter'
import type { Context, MiddlewareHandler, Next } from 'hono'
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
/** `rateLimit()` options: the limiter's (`limits`, `store`, …) and the middleware's (`key`, `headers`, …), plus `getConnInfo`. */
export type RateLimitOptions = CoreRateLimitOptions<Args, Awaitable<Response>> & AddressOptions
/** `concurrencyLimit()` options: `limit`, `key`, `statusCode`, `name`, `headers`, …, plus `getConnInfo`. */
export type ConcurrencyLimitOptions = CoreConcurrencyOptions<Args, Awaitable<Response>> & AddressOptions
/** `admissionControl()` options: `maxActive`, `window`, `slots`, `key`, `sync`, `statusCode`, …, plus `getConnInfo`. */
export type AdmissionControlOptions = CoreAdmissionOptions<Args, Awaitable<Response>> & AddressOptions
/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { AdmissionInfo } from '@sluice/core/adapter'
/**
 * `adaptiveConcurrency()` options: `algorithm`, `min`, `max`, `classes`, `priority`, `queue`,
 * `statusCode` (default 503), …, plus `getConnInfo`. On Node, `eventLoopDelay` takes
 * `{ histogram: monitorEventLoopDelay(), threshold }` (enable the histogram); other runtimes have none.
 */
export type AdaptiveConcurrencyOptions = CoreAdaptiveOptions<Args, Awaitable<Response>> & AddressOptions
export type { OverloadInfo } from '@sluice/core/adapter'
export type { AdmissionState, ConcurrencyInfo, Decision }

/**
 * The variables `rateLimit()` sets. Importing this package already types `c.get('rateLimit')` and
 * `c.var.rateLimit` on any app (see the augmentation below); `new Hono<{ Variables: RateLimitVariables }>()`
 * remains for apps that declare their variables explicitly.
 */
export interface RateLimitVariables {
  /** The rate-limit decision for this request (undefined when `skip` let it through). */
  rateLimit: Decision | undefined
}

// Types `c.get('rateLimit')` on a plain `new Hono()`.
declare module 'hono' {
  interface ContextVariableMap {
    /** The rate-limit decision for this request, set by `@sluice/hono`'s `rateLimit()` (undefined when skipped). */
    rateLimit: Decision | undefined
    /** Throttling mode, the active-client estimate and whether this client was known: `admissionControl()`. */
    admission: AdmissionState | undefined
  }
}

/** What `rateLimit()` returns: a Hono middleware that also exposes its limiter. */
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

/** Header names in lower case, as Headers keeps them (see `lowerCaseName`). */
function writeHeaders(c: Context, headers: readonly HeaderEntry[]): void {
  for (const { name, value, append } of headers) c.header(lowerCaseName(name), value, append ? APPEND : undefined)
}

async function deny(
  c: Context,
  { status, headers, response, fallback }: DenyPlan<Awaitable<Response>>,
): Promise<Response> {
  c.status(status as 429)
  writeHeaders(c, headers)
  if (typeof response !== 'function') return bodyOf(c, status, response)
  const res = await response()
  // An onLimited that returned nothing did not answer: the default denial, as Express and Koa.
  if (res === undefined) return bodyOf(c, status, fallback)
  // Anything else would leave Hono's default 200, or fail deep inside Hono.
  if (!(res instanceof Response)) {
    throw new ConfigError('onLimited', res, 'must return a Response, such as c.json(body, 429) or c.text(text, 429)')
  }
  c.res = res
  addMissingHeaders(c, headers)
  return c.res
}

function bodyOf(c: Context, status: number, body: ResponseBody): Response {
  return c.body(body.text, status as 429, { 'Content-Type': body.contentType })
}

/**
 * A Response built by hand (not with c.json, c.text or c.body) lacks the headers set on the
 * context beforehand. Touching the response only then keeps @hono/node-server on its fast path,
 * which a header written after the handler would leave (about 3× the CPU per request).
 * A list header (RateLimit, RateLimit-Policy) that is there but lacks this limiter's member (an
 * inner limiter or the handler wrote its own) gets the member put first, as an outer limiter's
 * member comes first when the headers are written before the handler.
 */
function addMissingHeaders(c: Context, headers: readonly HeaderEntry[]): void {
  // Even reading c.res.headers makes @hono/node-server build them and leave its fast path.
  if (headers.length === 0) return
  const present = c.res.headers
  // The usual case, a response built with the context's headers (c.text, c.json, …): the list
  // header written last (RateLimit) holds this limiter's member, so the response carries what was
  // written before the handler, and one lookup settles it. A denial ends with Retry-After, which
  // a hand-built response may repeat: it takes the full check.
  const last = headers[headers.length - 1] as HeaderEntry
  if (last.append) {
    const current = present.get(lowerCaseName(last.name))
    if (current !== null && (current === last.value || hasMember(current, last.value))) return
  }
  let missing: [name: string, value: string][] | undefined
  for (const { name, value, append } of headers) {
    const current = present.get(lowerCaseName(name))
    if (current === null) {
      missing ??= []
      missing.push([name, value])
    } else if (append && !hasMember(current, value)) {
      missing ??= []
      missing.push([name, `${value}, ${current}`])
    }
  }
  if (missing) for (const [name, value] of missing) c.header(lowerCaseName(name), value)
}

/** Whether a list header already holds every member of `members` (one limiter's, in order). */
function hasMember(list: string, members: string): boolean {
  const at = list.indexOf(members)
  if (at === -1) return false
  const end = at + members.length
  return (at === 0 || list.startsWith(', ', at - 2)) && (end === list.length || list.startsWith(',', end))
}

/** Rate limits requests: `app.use(rateLimit({ limits: ['100/min', '2/s'] }))`. */
export function rateLimit<const L extends RateLimitOptions['limits'] = RateLimitOptions['limits']>(
  options: RateLimitOptions & { limits?: L & CheckedLimits<L> },
): RateLimitMiddleware {
  const handler = createRateLimitHandler(options, adapterFor(options))
  // The Variables type names the default; another name is the user's to type.
  const property = handler.property as 'rateLimit'
  const middleware: MiddlewareHandler<{ Variables: RateLimitVariables }> = async (c, next) => {
    const planned = handler.plan(c)
    // Awaiting a plan made synchronously (memory store) would still cost a microtask.
    const plan = isThenable(planned) ? await planned : planned
    if (plan.kind === 'skip') return next()
    c.set(property, plan.decision)
    if (plan.kind === 'deny') return deny(c, plan)
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
    if (plan.kind === 'deny') return deny(c, plan)
    await holdingSlot(c, next, plan.headers, plan.release)
  }
}

/**
 * Runs the route while holding a slot (`concurrencyLimit`, `adaptiveConcurrency`): the headers
 * written, the slot released when the response body has been sent (`true`) or cancelled by a
 * client that left (`false`), or once the handler is done when there is no body to wait for.
 */
async function holdingSlot(
  c: Context,
  next: Next,
  headers: readonly HeaderEntry[],
  release: (completed: boolean) => void,
): Promise<void> {
  let handedOver = false
  try {
    writeHeaders(c, headers)
    await next()
    addMissingHeaders(c, headers)
    const { body } = c.res
    // Hono answers HEAD by running the GET route and dropping its body unread: release now.
    if (body && c.req.method !== 'HEAD') {
      c.res = new Response(onStreamDone(body, release), c.res)
      handedOver = true
    }
  } finally {
    if (!handedOver) release(true)
  }
}

/** The variable `admissionControl()` sets: `new Hono<{ Variables: AdmissionVariables }>()`. */
export interface AdmissionVariables {
  /** Throttling mode, the active-client estimate and whether this client was known (undefined when skipped). */
  admission: AdmissionState | undefined
}

/** What `admissionControl()` returns: the middleware, which also exposes its `clients`. */
export type AdmissionMiddleware = MiddlewareHandler<{ Variables: AdmissionVariables }> & {
  /** The clients seen within the window, behind the middleware (`has`, `size`). */
  readonly clients: ActiveClients
}

/**
 * Throttling mode: once more than `maxActive` clients were active within the window, only those
 * already seen are served; new ones get 429. `app.use(admissionControl({ maxActive: 10_000 }))`.
 */
export function admissionControl(options: AdmissionControlOptions): AdmissionMiddleware {
  const handler = createAdmissionHandler(options, adapterFor(options))
  const middleware: MiddlewareHandler<{ Variables: AdmissionVariables }> = async (c, next) => {
    const planned = handler.plan(c)
    const plan = isThenable(planned) ? await planned : planned
    if (plan.kind === 'skip') return next()
    c.set('admission', plan.state)
    if (plan.kind === 'deny') return deny(c, plan)
    await next()
  }
  return Object.assign(middleware, { clients: handler.clients })
}

/** What `adaptiveConcurrency()` returns: the middleware, which also exposes its limiter (`limit`, `stats()`). */
export type AdaptiveConcurrencyMiddleware = MiddlewareHandler & { readonly limiter: AdaptiveLimiter }

/**
 * A concurrency limit for the whole service, learned from the latency of the requests it
 * admits; over it, requests wait briefly (most critical class first) and are then refused with
 * 503 and Retry-After. The slot is freed when the handler is done, or, for a response with a
 * body, when the body has been sent (a sample) or cancelled by a client that left (a drop).
 */
export function adaptiveConcurrency(options: AdaptiveConcurrencyOptions = {}): AdaptiveConcurrencyMiddleware {
  const handler = createAdaptiveHandler(options, adapterFor(options))
  const middleware: MiddlewareHandler = async (c, next) => {
    const planned = handler.plan(c)
    const plan = isThenable(planned) ? await planned : planned
    if (plan.kind === 'skip') return next()
    if (plan.kind === 'deny') return deny(c, plan)
    await holdingSlot(c, next, plan.headers, plan.release)
  }
  return Object.assign(middleware, { limiter: handler.limiter })
}
