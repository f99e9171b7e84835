// The four plugins share one shape: options for every route of the scope, a route's
// `config[name]` that replaces them (or `false` to exempt it), `global: false` for only the routes
// that ask, `hook` for where the check runs, and `app[name](options)` for a hook of one's own.
import { ConfigError, MemoryStore } from '@sluice/core'
import type { FastifyInstance, FastifyPluginAsync, RouteOptions } from 'fastify'
import { fastifyPlugin } from 'fastify-plugin'
import type { RequestHook } from './hooks.js'

/** Where the check runs: before the body is parsed (the cheapest), or after authentication. */
export type HookName = 'onRequest' | 'preValidation' | 'preHandler'
const HOOK_NAMES: readonly HookName[] = ['onRequest', 'preValidation', 'preHandler']

/** What a plugin's options add to a limit's: which routes it covers, and at which hook. */
export interface Placement {
  /** Limit every route of the scope (default true); false: only routes whose config asks. */
  global?: boolean
  /** Default `'onRequest'`; `'preValidation'` or `'preHandler'` to key by an authenticated user. */
  hook?: HookName
}

export interface Kind<O extends object, H extends RequestHook> {
  /** The route config key, the decorator and the plugin's name. */
  readonly name: 'rateLimit' | 'concurrencyLimit' | 'admissionControl' | 'adaptiveConcurrency'
  /** Builds one hook, checking its options. */
  build(options: O): H
  /** What every limit of one registration shares (the rate limits: one store). */
  shared(options: O): O
  /** The options of a route or a hook of its own, over the registration's. */
  merge(base: O, own: O, route: string | undefined): O
  /** Whether options alone (without a route's) make a limit: the registration can be checked at once. */
  complete(options: O): boolean
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

function placementOf(name: string, options: Record<string, unknown>): Required<Placement> {
  const { global = true } = options
  if (typeof global !== 'boolean') throw new ConfigError('global', global, 'must be true or false')
  return { global, hook: hookOf(name, options.hook, 'onRequest') }
}

function hookOf(name: string, hook: unknown, otherwise: HookName): HookName {
  if (hook === undefined) return otherwise
  if (!HOOK_NAMES.includes(hook as HookName)) {
    throw new ConfigError('hook', hook, `must be one of ${HOOK_NAMES.map((h) => `'${h}'`).join(', ')} (${name})`)
  }
  return hook as HookName
}

function withoutPlacement<O>(options: Record<string, unknown>): O {
  const { global: _global, hook: _hook, ...rest } = options
  return rest as O
}

/** A route as messages name it: `GET /login` (a GET route's HEAD twin counts with it). */
function routeName({ method, url }: RouteOptions): string {
  const methods = [method].flat().map((m) => (m === 'HEAD' ? 'GET' : m))
  return `${[...new Set(methods)].join(',')} ${url}`
}

/**
 * A route's namespace: its methods and URL in the characters a namespace may hold, every other
 * character (and `*` itself) written as `*` and its UTF-8 bytes in hex, so two routes never meet.
 */
function routeNamespace(name: string): string {
  const [methods, url] = name.split(' ', 2) as [string, string]
  const escaped = encodeURIComponent(url).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${methods.replaceAll(',', '-')}.${escaped.replaceAll('%', '*')}`
}

/**
 * Puts `hook` before the route's own hooks for `name`: the scope's limit was declared before the
 * route, as Fastify runs an instance's hooks before a route's.
 */
function addRouteHook(route: RouteOptions, name: HookName, hook: RequestHook): void {
  const existing = route[name] as RequestHook | RequestHook[] | undefined
  route[name] = (existing === undefined ? [hook] : [hook, existing].flat()) as never
}

/**
 * A `fastify-plugin` plugin for `kind`: hooks added to routes as they are declared (`onRoute`),
 * so every option, a route's config included, is checked at startup, never per request.
 */
export function pluginOf<O extends object, H extends RequestHook>(
  kind: Kind<O, H>,
): FastifyPluginAsync<Partial<O> & Placement> {
  const { name } = kind
  const registered = new WeakSet<FastifyInstance>()
  async function plugin(fastify: FastifyInstance, options: Partial<O> & Placement): Promise<void> {
    if (!isObject(options)) throw new ConfigError('options', options, `of ${name} must be an object`)
    if (registered.has(fastify)) {
      throw new ConfigError(
        name,
        options,
        `is registered twice on one scope: register it once, and give routes their own limits with config: { ${name}: { … } } or app.${name}(options)`,
      )
    }
    registered.add(fastify)
    const placement = placementOf(name, options)
    const base = kind.shared(withoutPlacement<O>(options))
    const scopeHook = placement.global || kind.complete(base) ? kind.build(base) : undefined

    if (!fastify.hasDecorator(name)) {
      fastify.decorate(name, (own?: O) => {
        if (own === undefined && scopeHook !== undefined) return scopeHook
        if (!isObject(own)) throw new ConfigError('options', own, `of app.${name}() must be an object`)
        return kind.build(kind.merge(base, own, undefined))
      })
    }
    if (name === 'rateLimit' && !fastify.hasRequestDecorator('rateLimit'))
      fastify.decorateRequest('rateLimit', undefined)
    if (name === 'admissionControl' && !fastify.hasRequestDecorator('admission')) {
      fastify.decorateRequest('admission', undefined)
    }

    fastify.addHook('onRoute', (route) => {
      const config = (route.config as Record<string, unknown> | undefined)?.[name]
      if (config === false) return
      if (config === undefined) {
        if (placement.global && scopeHook !== undefined) addRouteHook(route, placement.hook, scopeHook)
        return
      }
      const where = routeName(route)
      if (!isObject(config)) {
        throw new ConfigError(`config.${name}`, config, `of ${where} must be an object of options, or false`)
      }
      try {
        const hook = hookOf(name, config.hook, placement.hook)
        addRouteHook(route, hook, kind.build(kind.merge(base, withoutPlacement<O>(config), where)))
      } catch (error) {
        if (error instanceof ConfigError) error.message = `${where}: config.${name}.${error.message}`
        throw error
      }
    })
  }
  return fastifyPlugin(plugin, { fastify: '4.x || 5.x', name: `@sluice/fastify:${name}` })
}

/** What `createLimiter` takes besides `limits` and `namespace` (`validate` is the hook's too). */
const LIMITER_FIELDS = ['store', 'onStoreError', 'timeout', 'maxDelay', 'breaker', 'observe']

/** Rate limits: one store for the registration (a `MemoryStore` unless given), so routes can share counts. */
export function rateLimitKind<
  O extends { limits?: unknown; limiter?: unknown; store?: unknown; namespace?: string },
  H extends RequestHook,
>(build: (options: O) => H): Kind<O, H> {
  return {
    name: 'rateLimit',
    build,
    shared: (options) =>
      options.store === undefined && options.limiter === undefined ? { ...options, store: new MemoryStore() } : options,
    merge(base, own, route) {
      const ownLimits = own.limits !== undefined || own.limiter !== undefined
      const { limits, limiter, namespace, ...inherited } = base
      // A prebuilt limiter of the route's own brings its store and everything else a limiter takes.
      if (own.limiter !== undefined)
        for (const field of LIMITER_FIELDS) delete (inherited as Record<string, unknown>)[field]
      const merged = { ...inherited, ...(ownLimits ? {} : { limits, limiter }), ...own } as O
      if (merged.limiter !== undefined) return merged
      // A route of its own counts apart from the scope's limit and every other route, unless it names a namespace.
      const prefix = namespace === undefined ? '' : `${namespace}.`
      return {
        ...merged,
        namespace: own.namespace ?? (route === undefined ? namespace : prefix + routeNamespace(route)),
      }
    },
    complete: (options) => options.limits !== undefined || options.limiter !== undefined,
  }
}

/**
 * Concurrency limits, admission control and adaptive concurrency: a route's options replace the
 * registration's (and make a limit of the route's own).
 */
export function replacingKind<O extends object, H extends RequestHook>(
  name: 'concurrencyLimit' | 'admissionControl' | 'adaptiveConcurrency',
  build: (options: O) => H,
  complete: (options: O) => boolean,
): Kind<O, H> {
  return { name, build, shared: (options) => options, merge: (base, own) => ({ ...base, ...own }), complete }
}
