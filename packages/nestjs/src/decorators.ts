import type { CheckedLimits } from '@sluice/core'
import { ConfigError } from '@sluice/core'
import { checkNestOptions, type RateLimitOptions } from './options.js'

/** Where `@RateLimit()` and `@SkipRateLimit()` leave their word: a symbol shared by every copy of this package. */
const METADATA = Symbol.for('@sluice/nestjs:rate-limit')

/** What a class or handler says: its own options, or that it is not limited. */
export type RateLimitMetadata = { readonly options: RateLimitOptions } | { readonly skip: true }

type Target = object & { [METADATA]?: RateLimitMetadata }

/** A decorator for a controller class or one of its handlers. */
export type ClassOrHandlerDecorator = (
  target: object,
  propertyKey?: string | symbol,
  descriptor?: PropertyDescriptor,
) => void

function decorator(name: string, metadata: RateLimitMetadata): ClassOrHandlerDecorator {
  return (target, propertyKey, descriptor) => {
    if (propertyKey === undefined && typeof target === 'function') {
      define(target, metadata)
      return
    }
    const handler = descriptor?.value as unknown
    if (propertyKey === undefined || typeof handler !== 'function') {
      const owner = (typeof target === 'function' ? target : target.constructor).name
      const member = propertyKey === undefined ? owner : `${owner}.${String(propertyKey)}`
      const what = typeof descriptor === 'number' ? 'a parameter' : descriptor?.get ? 'an accessor' : 'a property'
      throw new ConfigError(name, member, `goes on a controller class or one of its handler methods, not on ${what}`)
    }
    define(handler, metadata)
  }
}

function define(target: Target, metadata: RateLimitMetadata): void {
  // Own property: a subclass does not inherit its base class's word by accident of lookup.
  Object.defineProperty(target, METADATA, { value: metadata, configurable: true })
}

/** What `@RateLimit()` or `@SkipRateLimit()` put on this class or handler itself, if anything. */
export function metadataOf(target: object): RateLimitMetadata | undefined {
  return Object.hasOwn(target, METADATA) ? (target as Target)[METADATA] : undefined
}

/**
 * The rate limit of a controller or one handler: `@RateLimit({ limits: ['5/min'] })`. A handler's
 * options override its controller's, which override `SluiceModule.forRoot()`'s, option by option.
 * Options that make a limiter (`limits`, `store`, `namespace`, …) give the class or handler a
 * count of its own; the others (`cost`, `key`, …) keep counting where the limits were declared.
 */
export function RateLimit<const L extends RateLimitOptions['limits'] = RateLimitOptions['limits']>(
  options: RateLimitOptions & { limits?: L & CheckedLimits<L> },
): ClassOrHandlerDecorator {
  checkNestOptions(options, '@RateLimit()')
  return decorator('@RateLimit()', { options })
}

/** Leaves a controller or handler unlimited: not counted, no headers. A handler's `@RateLimit()` still applies. */
export function SkipRateLimit(): ClassOrHandlerDecorator {
  return decorator('@SkipRateLimit()', { skip: true })
}
