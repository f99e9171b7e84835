import { HttpException } from '@nestjs/common'
import type { Decision } from '@sluice/core'

/**
 * A request refused by a rate limit: status 429 (or the `statusCode` option), its body the
 * problem details (or the `message` option), so Nest's exception filters see it as any other
 * `HttpException`. On HTTP the guard has already set `Retry-After` and the RateLimit headers on
 * the response; they are also here, for a filter that answers some other way (GraphQL, WebSocket,
 * microservices).
 */
export class RateLimitException extends HttpException {
  override readonly name = 'RateLimitException'
  constructor(
    body: string | object,
    status: number,
    /** The decision that refused the request. */
    readonly decision: Decision,
    /** `Retry-After` and the rate-limit headers, as name and value. */
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(body, status)
    // Nest names an exception built from an object by its class; the problem's detail says more (logs, GraphQL errors).
    const detail = (body as { detail?: unknown }).detail
    if (typeof detail === 'string') this.message = detail
  }
  /** Seconds until a retry can pass: the `Retry-After` value. */
  get retryAfter(): number {
    return Number(this.headers['Retry-After'])
  }
}
