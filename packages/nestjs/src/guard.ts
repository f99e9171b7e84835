import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common'
import type { Decision } from '@sluice/core'
import type { HeaderEntry, RateLimitPlan } from '@sluice/core/adapter'
import { isThenable, onResponseDone } from '@sluice/core/adapter'
import { handlerOutcome, httpOf, nodeResponseOf, writeHeaders } from './context.js'
import { RateLimitException } from './exception.js'
import { RateLimits } from './rate-limits.js'

/**
 * Rate limits what it guards: globally (`{ provide: APP_GUARD, useClass: RateLimitGuard }`) or
 * per controller (`@UseGuards(RateLimitGuard)`), with the limits of `SluiceModule.forRoot()` and
 * of `@RateLimit()`. Answers synchronously when the store does (memory), making no promise of its
 * own; refuses by throwing a `RateLimitException`.
 */
export class RateLimitGuard implements CanActivate {
  constructor(private readonly limits: RateLimits) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const handler = this.limits.handlerFor(context.getClass(), context.getHandler())
    if (handler === undefined) return true
    const plan = handler.plan(context)
    if (isThenable(plan)) return Promise.resolve(plan).then((ready) => apply(context, handler.property, ready))
    return apply(context, handler.property, plan)
  }
}

Injectable()(RateLimitGuard)
Inject(RateLimits)(RateLimitGuard, undefined, 0)

function apply(context: ExecutionContext, property: string, plan: RateLimitPlan<never>): boolean {
  if (plan.kind === 'skip') return true
  const http = httpOf(context)
  if (http) (http.request as unknown as Record<string, Decision>)[property] = plan.decision
  if (plan.kind === 'continue') {
    writeHeaders(http?.response, plan.headers)
    if (plan.settle) {
      // On HTTP the response's end tells how it went, whatever an exception filter made of a
      // failed handler; elsewhere RateLimitInterceptor tells.
      if (context.getType() === 'http' && http?.response) onResponseDone(nodeResponseOf(http.response), plan.settle)
      else handlerOutcome.await(context, plan.settle)
    }
    return true
  }
  const body = plan.response as { contentType: string; text: string }
  const json = body.contentType.includes('json')
  const headers: HeaderEntry[] = [...plan.headers]
  // Nest's filters write an object as JSON: the problem details keep their own media type.
  if (body.contentType.startsWith('application/problem+json')) {
    headers.push({ name: 'Content-Type', value: body.contentType, append: false })
  }
  writeHeaders(http?.response, headers)
  throw new RateLimitException(
    json ? JSON.parse(body.text) : body.text,
    plan.status,
    plan.decision,
    Object.fromEntries(plan.headers.map(({ name, value }) => [name, value])),
  )
}
