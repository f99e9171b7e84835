import type { Decision } from '@sluice/core'
import { ConfigError } from '@sluice/core'
import type { RateLimitOptions as CoreRateLimitOptions } from '@sluice/core/adapter'
import type { Args } from './context.js'

/**
 * Options of `SluiceModule.forRoot()` and `@RateLimit()`: the limiter's (`limits`, `store`, …)
 * and the guard's (`key`, `cost`, `headers`, …). Functions receive Nest's `ExecutionContext`.
 * There is no `onLimited`: a denial is a `RateLimitException`, answered by Nest's exception filters.
 */
export type RateLimitOptions = Omit<CoreRateLimitOptions<Args, never>, 'onLimited'>

/** Options of `SluiceModule.forRoot()`: the defaults of every route the guard covers. */
export type SluiceModuleOptions = RateLimitOptions

const NAMED_LIMITS = "limits: [{ name: 'short', limit: 3, window: '1s' }, { name: 'long', limit: 100, window: '1m' }]"

/**
 * @nestjs/throttler's options, and what to write instead. Checked before the options of every
 * adapter, whose hints speak of other libraries (`ttl` there is a store's expiry, here a window).
 */
const THROTTLER_HINTS: Readonly<Record<string, string>> = {
  ttl: "set the window in limits: { ttl: 60000, limit: 10 } is limits: ['10/min']",
  limit: "set the limit in limits: { ttl: 60000, limit: 10 } is limits: ['10/min']",
  throttlers: `list the limits, named if you like; they are decided together, all or nothing: ${NAMED_LIMITS}`,
  default: `name the policy in limits: ${NAMED_LIMITS}`,
  blockDuration: "use blockFor in a policy, e.g. limits: [{ limit: 5, window: '1m', blockFor: '15m' }]",
  getTracker: 'use key: (context) => a string, number or bigint (default: the client IP)',
  generateKey: 'use key: (context) => the client key; a limit declared on a controller or handler counts there alone',
  skipIf: 'use skip: (context) => boolean',
  ignoreUserAgents: "use skip: (context) => /bot/i.test(context.switchToHttp().getRequest().headers['user-agent'])",
  errorMessage: 'use message',
  storage:
    'use store: a sluice store such as new RedisStore({ client }) (or keep @nestjs/throttler with storage: new SluiceThrottlerStorage(store))',
  setHeaders: "use headers: false to send none, or 'draft-11' (the default) | 'draft-7' | 'draft-6' | 'legacy'",
  name: `name a policy in limits: ${NAMED_LIMITS}`,
  onLimited:
    'a denial is a RateLimitException (an HttpException): answer it your own way in an exception filter, @Catch(RateLimitException)',
}

/**
 * Rejects what is not an options object and the options of @nestjs/throttler, with what to write
 * instead. Every other option is checked by `@sluice/core` when the app starts.
 */
export function checkNestOptions(options: unknown, where: string): asserts options is RateLimitOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError('options', options, `of ${where} must be an object such as { limits: ['100/min'] }`)
  }
  for (const [name, value] of Object.entries(options)) {
    const hint = THROTTLER_HINTS[name]
    if (hint !== undefined && value !== undefined)
      throw new ConfigError(name, value, `is not an option of ${where}: ${hint}`)
  }
}

/** The options that make a limiter: a level that sets one of them has a limiter, and a count, of its own. */
export const LIMITER_FIELDS = [
  'limits',
  'limiter',
  'store',
  'onStoreError',
  'timeout',
  'maxDelay',
  'namespace',
  'breaker',
  'observe',
] as const

export type { Decision }
