import { didYouMean } from './did-you-mean.js'
import { ConfigError } from './errors.js'

/** What to write instead of an option of another limiter; a function when it depends on the value. */
export type OptionHint = string | ((value: unknown) => string)

/**
 * Options that users of express-rate-limit, rate-limiter-flexible, hono-rate-limiter,
 * koa-ratelimit and rate-limit-redis bring along, and what to write instead. Shared by every
 * constructor that checks its options; a constructor adds its own with `hints`.
 */
export const FOREIGN_OPTION_HINTS: Readonly<Record<string, OptionHint>> = {
  windowMs: "set the window in limits, e.g. limits: ['100/15min']",
  max: "set the limit in limits, e.g. limits: ['100/15min']",
  limit: "set the limit in limits, e.g. limits: ['100/15min']",
  points: "set the limit in limits, e.g. limits: ['100/1h']",
  duration: "set the window in limits, e.g. limits: ['100/1h']",
  keyGenerator: 'use key: (request) => string',
  id: 'use key: (ctx) => string',
  handler: 'use onLimited',
  standardHeaders: (value) =>
    value === false
      ? 'use headers: false'
      : "use headers: 'draft-11' (the default) | 'draft-7' | 'draft-6' | 'legacy' | false",
  // X-RateLimit-* are sent only with headers: 'legacy', so false asks for what already happens.
  legacyHeaders: (value) =>
    value === false
      ? "X-RateLimit-* headers are sent only with headers: 'legacy', so remove legacyHeaders"
      : "use headers: 'legacy' (X-RateLimit-* instead of the IETF RateLimit headers)",
  status: 'use statusCode',
  errorMessage: 'use message',
  whitelist: 'use skip',
  allowList: 'use skip',
  passOnStoreError: "use onStoreError: 'allow' | 'deny' | a fallback store",
  insuranceLimiter: 'use onStoreError: a fallback store, such as new MemoryStore()',
  blockDuration: "use blockFor in a policy, e.g. limits: [{ limit: 5, window: '1m', blockFor: '15m' }]",
  keyPrefix: 'use namespace on the limiter (or prefix on a RedisStore)',
  // A Redis client goes to a store; the stores of @sluice/redis say `use client`.
  storeClient: 'pass the client to a store: store: new RedisStore({ client })',
  sendCommand: 'pass the client to a store: store: new RedisStore({ client })',
  db: 'pass a client connected to that database to a store: store: new RedisStore({ client })',
  ttl: "expiries follow each policy's window; there is nothing to set",
  expire: "expiries follow each policy's window; there is nothing to set",
  max_keys: 'use maxKeys',
  identifier: "use name on a policy object, e.g. limits: [{ limit: 100, window: '15min', name: 'api' }]",
  execEvenly:
    "use algorithm: 'gcra' with maxDelay on a policy, e.g. limits: [{ limit: 10, window: '1s', algorithm: 'gcra', maxDelay: '1s' }], or limiter.acquire to wait for quota",
  inMemoryBlockOnConsumed:
    'RedisStore answers a denied key in the process until its retryAfter (its deniedCache, on by default), so remove it',
  inMemoryBlockDuration:
    'RedisStore answers a denied key in the process until its retryAfter (its deniedCache, on by default), so remove it',
  // @fastify/rate-limit
  timeWindow: "set the window in limits, e.g. limits: ['100/1min']",
  groupId:
    "routes that share one count name one namespace: config: { rateLimit: { limits: ['5/min'], namespace: 'auth' } }",
  errorResponseBuilder: "use message for the body, or onLimited (throw from it to reach Fastify's error handler)",
  nameSpace: 'use prefix on a RedisStore (or namespace on the limiter)',
  skipOnError: (value) =>
    value === true ? "use onStoreError: 'allow'" : "use onStoreError: 'deny' (the default is 'allow')",
  addHeaders: "use headers: 'draft-11' (the default) | 'draft-7' | 'draft-6' | 'legacy' | false",
  addHeadersOnExceeding: "use headers: 'draft-11' (the default) | 'draft-7' | 'draft-6' | 'legacy' | false",
  enableDraftSpec:
    "use headers: 'draft-6' for RateLimit-Limit/-Remaining/-Reset (the default, 'draft-11', sends RateLimit and RateLimit-Policy)",
  continueExceeding:
    "to keep out a client that goes on past its limit, use blockFor in a policy, e.g. limits: [{ limit: 5, window: '1m', blockFor: '15m' }]",
  exponentialBackoff:
    "to keep out a client that goes on past its limit, use blockFor in a policy, e.g. limits: [{ limit: 5, window: '1m', blockFor: '15m' }]",
  ban: 'use blockFor in a policy, and statusCode: 403 if a blocked client should get 403',
  onExceeding: 'use observe, which sees every decision',
  onExceeded: 'use onLimited (or observe, which sees every decision)',
  onBanReach: 'use onLimited (or observe, which sees every decision)',
  cache: 'use store: new MemoryStore({ maxKeys })',
  redis: 'use store: new RedisStore({ client }) from @sluice/redis',
}

/** The same for the options of one policy, as other limiters name them. */
export const FOREIGN_POLICY_OPTION_HINTS: Readonly<Record<string, string>> = {
  windowMs: "use window: milliseconds or a string such as '15min'",
  max: 'use limit',
  points: 'use limit',
  duration: "use window: milliseconds (not seconds) or a string such as '1h'",
  blockDuration: "use blockFor: milliseconds or a string such as '15m'",
  execEvenly: "use algorithm: 'gcra' with maxDelay",
  warmupPeriod: "use warmup: milliseconds or a string such as '30s' (Guava's warmupPeriod)",
  warmUpPeriodSec: "use warmup: milliseconds (not seconds) or a string such as '10s'",
}

/**
 * Rejects misspelt or foreign options with a ConfigError naming the known ones, and the right
 * one when we can tell (a hint, or the known name closest by edit distance). An option set to
 * undefined is ignored, as a missing one.
 */
export function assertKnownOptions(
  options: Record<string, unknown>,
  known: readonly string[],
  fn: string,
  hints: Readonly<Record<string, OptionHint>> = {},
): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name) || options[name] === undefined) continue
    const value = options[name]
    const hint = hints[name] ?? FOREIGN_OPTION_HINTS[name]
    const closest = didYouMean(name, known)
    const advice =
      hint !== undefined
        ? `: ${typeof hint === 'function' ? hint(value) : hint}`
        : closest !== undefined
          ? `: did you mean ${closest}?`
          : ''
    // A list built from others' (rateLimit()'s holds the limiter's) may name one twice.
    const names = [...new Set(known)].join(', ')
    throw new ConfigError(name, value, `is not an option of ${fn}${advice} (known options: ${names})`)
  }
}
