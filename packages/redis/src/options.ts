import { ConfigError } from '@sluice/core'

/** A prefix goes before the hash tag, so braces in it would move the tag. */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new ConfigError('prefix', prefix, 'must be a string without { or }, which would move the Cluster hash tag')
  }
}
