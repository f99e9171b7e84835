import { ConfigError } from '@sluice/core'
import type { OptionHint } from '@sluice/core/internal'

/** A prefix goes before the hash tag, so braces in it would move the tag. */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new ConfigError('prefix', prefix, 'must be a string without { or }, which would move the Cluster hash tag')
  }
}

/** What the stores of @sluice/redis say to options of rate-limit-redis and rate-limiter-flexible. */
export const CLIENT_OPTION_HINTS: Readonly<Record<string, OptionHint>> = {
  storeClient: 'use client',
  sendCommand: 'use client: an ioredis or node-redis client',
  db: 'use client: a client connected to that database',
}
