import type { Decision } from '@sluice/core'
import type { AdmissionState } from '@sluice/core/adapter'
import type { FastifyPluginAsync } from 'fastify'
import {
  type AdaptiveConcurrencyHook,
  type AdaptiveConcurrencyOptions,
  type AdmissionControlOptions,
  type AdmissionHook,
  adaptiveConcurrencyHook,
  admissionControlHook,
  type ConcurrencyLimitOptions,
  concurrencyLimitHook,
  type RateLimitHook,
  type RateLimitOptions,
  type RequestHook,
  rateLimitHook,
} from './hooks.js'
import { type Placement, pluginOf, rateLimitKind, replacingKind } from './plugin.js'

/** Groups an address the way the default key does, for custom keys that fall back to the IP. */
export { ipKey } from '@sluice/core'
export type { AdmissionInfo, ConcurrencyInfo, OverloadInfo } from '@sluice/core/adapter'
export type { HookName, Placement } from './plugin.js'
export type {
  AdaptiveConcurrencyHook,
  AdaptiveConcurrencyOptions,
  AdmissionControlOptions,
  AdmissionHook,
  AdmissionState,
  ConcurrencyLimitOptions,
  Decision,
  RateLimitHook,
  RateLimitOptions,
  RequestHook,
}
export { adaptiveConcurrencyHook, admissionControlHook, concurrencyLimitHook, rateLimitHook }

/** The rate-limit plugin's options: a limit's, and which routes it covers at which hook. */
export type RateLimitPluginOptions = RateLimitOptions & Placement
/** A route's `config.rateLimit`: options over the plugin's (its `limits` replace the plugin's), and its hook. */
export type RouteRateLimitOptions = Partial<RateLimitOptions> & Pick<Placement, 'hook'>
/** A route's `config.concurrencyLimit`: options over the plugin's, and its hook. */
export type RouteConcurrencyLimitOptions = Partial<ConcurrencyLimitOptions> & Pick<Placement, 'hook'>
/**
 * A route's `config.admissionControl`: options over the plugin's, and its hook. Not `clients` or
 * `sync`: their types hold a class, which differs between this package's ESM and CommonJS
 * declarations, both of which declare this config (give them to the plugin, or `app.admissionControl`).
 */
export type RouteAdmissionControlOptions = Partial<Omit<AdmissionControlOptions, 'clients' | 'sync'>> &
  Pick<Placement, 'hook'>
/** A route's `config.adaptiveConcurrency`: options over the plugin's, making the route a limit of its own; and its hook. */
export type RouteAdaptiveConcurrencyOptions = AdaptiveConcurrencyOptions & Pick<Placement, 'hook'>
/** The adaptive-concurrency plugin's options (every one has a default): the limit's, and which routes at which hook. */
export type AdaptiveConcurrencyPluginOptions = AdaptiveConcurrencyOptions & Placement
/** The concurrency-limit plugin's options; with `global: false`, defaults for the routes that ask. */
export type ConcurrencyLimitPluginOptions =
  | (ConcurrencyLimitOptions & Placement)
  | (Partial<ConcurrencyLimitOptions> & Placement & { global: false })
/** The admission-control plugin's options; with `global: false`, defaults for the routes that ask. */
export type AdmissionControlPluginOptions =
  | (AdmissionControlOptions & Placement)
  | (Partial<AdmissionControlOptions> & Placement & { global: false })

declare module 'fastify' {
  interface FastifyRequest {
    /** The rate-limit decision for this request (undefined when no limit ran, or `skip` let it through). */
    rateLimit?: Decision
    /** Throttling mode, the active-client estimate and whether this client was known: `admissionControl`. */
    admission?: AdmissionState
  }
  interface FastifyContextConfig {
    /** This route's own rate limit over the plugin's, or false to exempt it. */
    rateLimit?: RouteRateLimitOptions | false
    /** This route's own concurrency limit, or false to exempt it. */
    concurrencyLimit?: RouteConcurrencyLimitOptions | false
    /** This route's own admission control, or false to exempt it. */
    admissionControl?: RouteAdmissionControlOptions | false
    /** This route's own adaptive limit (learned apart from the plugin's), or false to exempt it. */
    adaptiveConcurrency?: RouteAdaptiveConcurrencyOptions | false
  }
  interface FastifyInstance {
    /**
     * A rate-limit hook for one route's `onRequest` or `preHandler`: these options over the
     * plugin's; without options, the plugin's own limit (the same count).
     */
    rateLimit(options?: RouteRateLimitOptions): RateLimitHook
    /** A concurrency-limit hook for one route, these options over the plugin's. */
    concurrencyLimit(options?: Partial<ConcurrencyLimitOptions>): RequestHook
    /** An admission-control hook for one route, these options over the plugin's. */
    admissionControl(options?: Partial<AdmissionControlOptions>): AdmissionHook
    /**
     * An adaptive-concurrency hook for one route: without options, the plugin's own (the same
     * limit, its `limiter` to read); with options, a limit of its own over the plugin's options.
     */
    adaptiveConcurrency(options?: AdaptiveConcurrencyOptions): AdaptiveConcurrencyHook
  }
}

/**
 * Rate limits every route of the scope: `await app.register(rateLimit, { limits: ['100/min'] })`.
 * A route's `config: { rateLimit: { … } }` gives it limits of its own (counted apart, unless
 * they name a `namespace` another route shares), `config: { rateLimit: false }` exempts it, and
 * `global: false` limits only the routes that ask.
 */
export const rateLimit: FastifyPluginAsync<RateLimitPluginOptions> = pluginOf(rateLimitKind(rateLimitHook))

/** At most `limit` requests in flight per key, on every route of the scope (or those that ask). */
export const concurrencyLimit: FastifyPluginAsync<ConcurrencyLimitPluginOptions> = pluginOf(
  replacingKind('concurrencyLimit', concurrencyLimitHook, (options) => options.limit !== undefined),
)

/**
 * Throttling mode: once more than `maxActive` clients were active within the window, only those
 * already seen are served; new ones get 429.
 */
export const admissionControl: FastifyPluginAsync<AdmissionControlPluginOptions> = pluginOf(
  replacingKind('admissionControl', admissionControlHook, (options) => options.maxActive !== undefined),
)

/**
 * A concurrency limit for the whole service, learned from the latency of the requests it admits;
 * over it, requests wait briefly (most critical class first) and are then refused with 503 and
 * Retry-After. `await app.register(adaptiveConcurrency, { classes: ['critical', 'default'], priority })`;
 * `app.adaptiveConcurrency().limiter` reads the limit.
 */
export const adaptiveConcurrency: FastifyPluginAsync<AdaptiveConcurrencyPluginOptions> = pluginOf(
  replacingKind('adaptiveConcurrency', adaptiveConcurrencyHook, () => true),
)
