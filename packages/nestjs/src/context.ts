import type { ExecutionContext } from '@nestjs/common'
import type { HeaderEntry } from '@sluice/core/adapter'
import { type Adapter, lowerCaseName } from '@sluice/core/adapter'

/**
 * How handlers without an HTTP response went, for the rate limit's refunds: the guard leaves a
 * settle function under the call's arguments (the one array Nest hands the guard and the
 * interceptors of a call), `RateLimitInterceptor` calls it with the handler's status.
 */
export const handlerOutcome = {
  settles: new WeakMap<object, (completed: boolean) => void>(),
  statuses: new WeakMap<object, number>(),
  /** Called by the guard: settle this call once the interceptor knows how it went. */
  await(context: ExecutionContext, settle: (completed: boolean) => void): void {
    this.settles.set(context.getArgs(), settle)
  },
  /** Called by the interceptor: what to call with the handler's status, if the guard left anything. */
  pending(context: ExecutionContext): ((status: number) => void) | undefined {
    const args = context.getArgs()
    const settle = this.settles.get(args)
    if (settle === undefined) return undefined
    this.settles.delete(args)
    return (status) => {
      this.statuses.set(args, status)
      settle(true)
    }
  },
}

/** What the key, cost and skip functions receive: Nest's context of the request (HTTP, GraphQL, WebSocket, RPC). */
export type Args = [context: ExecutionContext]

/** The parts of an Express request or a Fastify request this package reads. */
interface HttpRequest {
  readonly ip?: string
  readonly headers: Record<string, string | string[] | undefined>
  /** Express: the app, for its 'trust proxy' setting. */
  readonly app?: { get(name: string): unknown }
  /** Fastify: the raw request (Fastify's has `ips` only when its `trustProxy` is set). */
  readonly raw?: unknown
  readonly ips?: readonly string[]
}

/** An Express response or a Fastify reply. */
export interface HttpResponse {
  statusCode: number
  readonly headersSent?: boolean
  /** Fastify's reply: the Node response underneath. */
  readonly raw?: NodeResponse
  getHeader(name: string): unknown
  hasHeader(name: string): boolean
  setHeader?(name: string, value: string): unknown
  /** Fastify's reply sets headers through `header()`. */
  header?(name: string, value: string): unknown
  /** Fastify's reply: whether a response was sent. */
  readonly sent?: boolean
}

interface NodeResponse {
  once(event: 'finish' | 'close', listener: () => void): unknown
  readonly writableFinished: boolean
  readonly closed: boolean
  readonly headersSent: boolean
  readonly statusCode: number
}

export interface Http {
  readonly request: HttpRequest
  readonly response: HttpResponse | undefined
}

/**
 * The HTTP request and response behind a context: the handler's own on either platform, or a
 * GraphQL resolver's, read from its context's `req` and `res` (Express) or `reply` (Fastify,
 * Mercurius). Undefined for WebSocket and microservice contexts, which have no HTTP response.
 */
export function httpOf(context: ExecutionContext): Http | undefined {
  const type = context.getType<string>()
  if (type === 'http') return { request: context.getArgByIndex(0), response: context.getArgByIndex(1) }
  if (type === 'graphql') {
    const gql = context.getArgByIndex(2) as { req?: HttpRequest; res?: HttpResponse; reply?: HttpResponse } | undefined
    if (gql?.req) return { request: gql.req, response: gql.res ?? gql.reply }
  }
  return undefined
}

/** The Node response underneath: Express's is one, Fastify's reply holds it as `raw`. */
export function nodeResponseOf(response: HttpResponse): NodeResponse {
  return (response.raw ?? response) as NodeResponse
}

/** A WebSocket client's address: socket.io's handshake, or a `ws` socket's peer. */
function socketAddress(client: unknown): string | undefined {
  const socket = client as { handshake?: { address?: string }; _socket?: { remoteAddress?: string } } | undefined
  return socket?.handshake?.address ?? socket?._socket?.remoteAddress
}

/** Fastify does not say which proxies it trusts, only whether it trusts any: read as a set of hops. */
function trustOf(request: HttpRequest): 'ignored' | 'hops' | 'any' {
  if (request.raw !== undefined) return 'ips' in request ? 'hops' : 'ignored'
  const setting = request.app?.get('trust proxy')
  return setting === true ? 'any' : setting ? 'hops' : 'ignored'
}

// The platform's `request.ip` follows its own proxy setting (Express's 'trust proxy', Fastify's
// trustProxy, both given to Nest's adapter).
export const adapter: Adapter<Args> = {
  name: '@sluice/nestjs',
  addressSource: 'request.ip',
  address(context) {
    const http = httpOf(context)
    if (http) return http.request.ip
    return context.getType() === 'ws' ? socketAddress(context.getArgByIndex(0)) : undefined
  },
  status: (context) => {
    if (context.getType() !== 'http') return handlerOutcome.statuses.get(context.getArgs()) ?? 200
    const response = httpOf(context)?.response
    return response ? nodeResponseOf(response).statusCode : 200
  },
  proxy: {
    trust: (context) => {
      const http = httpOf(context)
      return http ? trustOf(http.request) : 'hops'
    },
    forwarded: (context) => httpOf(context)?.request.headers['x-forwarded-for'] !== undefined,
    setting: "the platform's trust proxy ('trust proxy' on Express, trustProxy on Fastify)",
    advice:
      "app.set('trust proxy', n) on Express, new FastifyAdapter({ trustProxy: n }) on Fastify, with n the number of proxies",
  },
}

/** Writes headers on either platform; a response that has started keeps its headers, as Express's adapter does. */
export function writeHeaders(response: HttpResponse | undefined, headers: readonly HeaderEntry[]): void {
  if (response === undefined || nodeResponseOf(response).headersSent) return
  const fastify = response.raw !== undefined
  for (const { name, value, append } of headers) {
    const existing = append ? response.getHeader(lowerCaseName(name)) : undefined
    const text = existing === undefined ? value : `${String(existing)}, ${value}`
    if (fastify) (response.header as (name: string, value: string) => unknown)(name, text)
    else (response.setHeader as (name: string, value: string) => unknown)(name, text)
  }
}
