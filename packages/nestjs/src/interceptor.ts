import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common'
import { type Observable, tap } from 'rxjs'
import { handlerOutcome } from './context.js'

/**
 * Tells the rate limit how a handler went where there is no HTTP response to watch (GraphQL
 * resolvers, WebSocket and microservice handlers), so that `skipFailedRequests`,
 * `skipSuccessfulRequests` and `actualCost` settle there too: a handler that throws counts as
 * failed (an `HttpException` with its status, anything else 500), one that completes as 200.
 * Register it beside the guard: `{ provide: APP_INTERCEPTOR, useClass: RateLimitInterceptor }`.
 * HTTP routes need no interceptor: their refunds follow the response the client got, whatever an
 * exception filter made of a failed handler.
 */
export class RateLimitInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const pending = handlerOutcome.pending(context)
    if (pending === undefined) return next.handle()
    let done = false
    const settle = (status: number) => {
      if (done) return
      done = true
      pending(status)
    }
    return next.handle().pipe(
      tap({
        complete: () => settle(200),
        error: (error: unknown) => settle(error instanceof HttpException ? error.getStatus() : 500),
        finalize: () => settle(200),
      }),
    )
  }
}

Injectable()(RateLimitInterceptor)
