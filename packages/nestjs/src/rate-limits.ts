import { Inject, Injectable, type OnModuleInit } from '@nestjs/common'
import { ModulesContainer } from '@nestjs/core'
import { ConfigError, createLimiter, type Limiter, MemoryStore } from '@sluice/core'
import { createRateLimitHandler, type RateLimitHandler } from '@sluice/core/adapter'
import { type Args, adapter } from './context.js'
import { metadataOf } from './decorators.js'
import { LIMITER_FIELDS, type RateLimitOptions, type SluiceModuleOptions } from './options.js'

/** The token of the module's options (`SluiceModule.forRoot()`'s, or what `forRootAsync`'s factory returned). */
export const SLUICE_OPTIONS = Symbol.for('@sluice/nestjs:options')

type Handler = RateLimitHandler<Args, never>
// biome-ignore lint/complexity/noBannedTypes: classes and handlers are what Nest hands the guard.
type Fn = Function

/** One level of options: the module's, a controller's or a handler's, and where it was written. */
interface Level {
  readonly options: Readonly<Record<string, unknown>>
  /** For messages: `@RateLimit() on UsersController.login`; undefined for the module's, which the messages need not place. */
  readonly where: string | undefined
  /** The namespace a limit declared here counts under unless it names one: undefined for the module. */
  readonly name: string | undefined
}

const declaresLimiter = (options: Readonly<Record<string, unknown>>) =>
  LIMITER_FIELDS.some((field) => options[field] !== undefined)

/**
 * Every limit of the app, built from the module's options and the decorators once, when the app
 * starts (a bad option fails `app.init()`, never a request), then looked up per request by the
 * handler and class Nest runs.
 */
export class RateLimits implements OnModuleInit {
  /** The module's store, for every limit that names none: one memory for the whole app. */
  readonly #store: MemoryStore | undefined
  readonly #module: Level
  readonly #limiters = new Map<Readonly<Record<string, unknown>>, Limiter>()
  readonly #byClass = new Map<Fn, Handler | undefined>()
  readonly #byHandler = new Map<Fn, Map<Fn, Handler | undefined>>()
  #moduleHandler: Handler | undefined | null = null

  constructor(
    options: SluiceModuleOptions,
    private readonly modules?: ModulesContainer,
  ) {
    this.#module = { options: options as Record<string, unknown>, where: undefined, name: undefined }
    this.#store = options.store === undefined && options.limiter === undefined ? new MemoryStore() : undefined
  }

  onModuleInit(): void {
    this.#moduleLevel()
    for (const module of this.modules?.values() ?? []) {
      for (const { metatype } of module.controllers.values()) if (metatype) this.#prepareClass(metatype, true)
      for (const { metatype } of module.providers.values()) {
        if (typeof metatype === 'function' && isClass(metatype)) this.#prepareClass(metatype, false)
      }
    }
  }

  /** The limit of one handler of one class, or undefined where nothing limits it. */
  handlerFor(cls: Fn, handler: Fn): Handler | undefined {
    const known = this.#byHandler.get(handler)
    if (known?.has(cls)) return known.get(cls)
    return this.#resolve(cls, handler)
  }

  #prepareClass(cls: Fn, controller: boolean): void {
    const methods = handlerMethods(cls)
    const decorated = metadataOf(cls) !== undefined || methods.some((method) => metadataOf(method) !== undefined)
    if (!decorated) return
    if (!controller && !isResolverOrGateway(cls)) {
      throw new ConfigError(
        '@RateLimit()',
        cls.name,
        'goes on a controller, a GraphQL resolver or a WebSocket gateway, or on one of their handlers: guards run on nothing else',
      )
    }
    for (const method of methods) {
      if (metadataOf(method) !== undefined && Reflect.getMetadataKeys(method).length === 0) {
        throw new ConfigError(
          '@RateLimit()',
          `${cls.name}.${method.name}`,
          'goes on a handler (a method with @Get(), @Post(), @MessagePattern(), @SubscribeMessage(), @Query() …): this method is not one',
        )
      }
      this.#resolve(cls, method)
    }
  }

  #resolve(cls: Fn, handler: Fn): Handler | undefined {
    let byClass = this.#byHandler.get(handler)
    if (byClass === undefined) {
      byClass = new Map()
      this.#byHandler.set(handler, byClass)
    }
    const own = metadataOf(handler)
    const result =
      own === undefined
        ? this.#classLevel(cls)
        : 'skip' in own
          ? undefined
          : this.#build([...this.#classLevels(cls), this.#level(own.options, `${cls.name}.${handler.name}`)])
    byClass.set(handler, result)
    return result
  }

  #moduleLevel(): Handler | undefined {
    if (this.#moduleHandler === null) this.#moduleHandler = this.#build([this.#module])
    return this.#moduleHandler
  }

  #classLevel(cls: Fn): Handler | undefined {
    if (this.#byClass.has(cls)) return this.#byClass.get(cls)
    const own = metadataOf(cls)
    const handler =
      own === undefined ? this.#moduleLevel() : 'skip' in own ? undefined : this.#build(this.#classLevels(cls))
    this.#byClass.set(cls, handler)
    return handler
  }

  /** The module's level and the class's own options, if it has any (a skipped class's handlers start from the module). */
  #classLevels(cls: Fn): Level[] {
    const own = metadataOf(cls)
    return own === undefined || 'skip' in own ? [this.#module] : [this.#module, this.#level(own.options, cls.name)]
  }

  #level(options: RateLimitOptions, name: string): Level {
    return { options: options as Record<string, unknown>, where: `@RateLimit() on ${name}`, name }
  }

  /** The handler of the most specific level, over the limiter of the nearest level that declares one. */
  #build(levels: Level[]): Handler | undefined {
    const last = levels.at(-1) as Level
    // The module's options alone may set defaults (store, message, …) for the decorators' limits.
    const defaultsOnly = levels.length === 1 && last.options.limits === undefined && last.options.limiter === undefined
    try {
      const limiter = defaultsOnly ? undefined : this.#limiterFor(levels)
      // A decorator that sets only cost, key and the like, with no limits anywhere, would limit nothing.
      if (limiter === undefined && !defaultsOnly) throw limitsRequired()
      const options: Record<string, unknown> = {}
      for (const { options: own } of levels) {
        for (const [name, value] of Object.entries(own)) {
          if (value !== undefined && !(LIMITER_FIELDS as readonly string[]).includes(name)) options[name] = value
        }
      }
      // Defaults without limits limit nothing, but are checked now all the same, on a stand-in limiter.
      const handler = createRateLimitHandler<Args, never>({ ...options, limiter: limiter ?? standIn() }, adapter)
      return defaultsOnly ? undefined : handler
    } catch (error) {
      throw located(error, last.where)
    }
  }

  #limiterFor(levels: Level[]): Limiter | undefined {
    let at = -1
    levels.forEach((level, index) => {
      if (declaresLimiter(level.options)) at = index
    })
    if (at === -1) return undefined
    const declaring = levels[at] as Level
    const cached = this.#limiters.get(declaring.options)
    if (cached !== undefined) return cached
    const limiter = this.#limiterAt(levels, at)
    this.#limiters.set(declaring.options, limiter)
    return limiter
  }

  /**
   * The limiter of the level at `at`: its own prebuilt `limiter`, or one made from the limiter
   * options of every level up to it (the nearest `limits`, `store`, …), counting under its own
   * namespace.
   */
  #limiterAt(levels: Level[], at: number): Limiter {
    const declaring = levels[at] as Level
    const prebuilt = declaring.options.limiter
    if (prebuilt !== undefined) {
      for (const field of LIMITER_FIELDS) {
        const value = declaring.options[field]
        if (field !== 'limiter' && value !== undefined) {
          throw new ConfigError(field, value, 'belongs to the prebuilt limiter: set it in createLimiter() instead')
        }
      }
      return prebuilt as Limiter
    }
    const merged: Record<string, unknown> = {}
    for (const level of levels.slice(0, at + 1)) {
      for (const field of [...LIMITER_FIELDS, 'validate']) {
        if (level.options[field] !== undefined) merged[field] = level.options[field]
      }
    }
    if (merged.limits === undefined) throw limitsRequired()
    delete merged.limiter
    merged.store ??= this.#store
    if (declaring.options.namespace === undefined && declaring.name !== undefined) {
      const base = this.#module.options.namespace
      merged.namespace = typeof base === 'string' ? `${base}:${declaring.name}` : declaring.name
    }
    return createLimiter(merged as unknown as Parameters<typeof createLimiter>[0])
  }
}

Injectable()(RateLimits)
Inject(SLUICE_OPTIONS)(RateLimits, undefined, 0)
Inject(ModulesContainer)(RateLimits, undefined, 1)

/** Says where a bad option was written: `@RateLimit() on UsersController.login: cost must be …`. */
function located(error: unknown, where: string | undefined): unknown {
  if (where !== undefined && error instanceof ConfigError && !error.message.startsWith(where)) {
    error.message = `${where}: ${error.message}`
  }
  return error
}

function limitsRequired(): ConfigError {
  return new ConfigError(
    'limits',
    undefined,
    "are required, e.g. limits: ['100/min', '2/s'] (or pass a prebuilt limiter)",
  )
}

function standIn(): Limiter {
  return createLimiter({ limits: '1/s', store: new MemoryStore() })
}

function isClass(value: Fn): boolean {
  return typeof value.prototype === 'object' && value.prototype !== null
}

/** A class's methods, its base classes' included (handlers may be inherited). */
function handlerMethods(cls: Fn): Fn[] {
  const methods = new Set<Fn>()
  for (let proto = cls.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, name)
      if (name !== 'constructor' && typeof descriptor?.value === 'function') methods.add(descriptor.value)
    }
  }
  return [...methods]
}

/** A GraphQL resolver or a WebSocket gateway: providers whose handlers Nest runs guards on. */
function isResolverOrGateway(cls: Fn): boolean {
  return Reflect.getMetadataKeys(cls).some((key) => /^(graphql|websockets):/.test(String(key)))
}
