// What the HTTP benchmark compares, shared by the runner (bench/http.bench.ts) and the servers.

export type Framework = 'express' | 'koa' | 'hono' | 'fastify' | 'nest-express' | 'nest-fastify'
export type Variant =
  | 'none'
  | 'control'
  | 'noop'
  | 'headers'
  | 'headers-prop'
  | 'sluice-1'
  | 'sluice-2'
  | 'quiet-1'
  | 'legacy-1'
  | 'erl-1'
  | 'erl-2'
  | 'krl-1'
  | 'krl-2'
  | 'hrl-1'
  | 'hrl-2'
  | 'frl-1'
  | 'frl-2'
  | 'ntl-1'
  | 'ntl-2'

/**
 * The variants each framework runs; each framework also runs the peer its users would pick:
 * express-rate-limit (`erl`) on Express, koa-ratelimit's memory driver (`krl`) on Koa,
 * hono-rate-limiter (`hrl`) on Hono, @fastify/rate-limit (`frl`) on Fastify, one instance per
 * policy as none takes several windows. `control`, `noop`
 * and `headers` are references, not limiters. `control` is `none` again in another process: what
 * it reads is the measurement's own error. `noop` and `headers` are what the framework charges for
 * one middleware that does nothing, and for one that only sets two constant headers shaped like
 * sluice's, so that sluice's own share of its cost can be told from the framework's. On Express,
 * `headers-prop` also sets the request property (`req.rateLimit`) to a constant, as the issue's
 * reference counts it there.
 */
export const VARIANTS: Record<Framework, readonly Variant[]> = {
  express: ['none', 'control', 'noop', 'headers', 'headers-prop', 'sluice-1', 'sluice-2', 'quiet-1', 'erl-1', 'erl-2'],
  koa: ['none', 'control', 'noop', 'headers', 'sluice-1', 'sluice-2', 'quiet-1', 'krl-1', 'krl-2'],
  hono: ['none', 'control', 'noop', 'headers', 'sluice-1', 'sluice-2', 'quiet-1', 'hrl-1', 'hrl-2'],
  fastify: ['none', 'control', 'noop', 'headers', 'sluice-1', 'sluice-2', 'quiet-1', 'legacy-1', 'frl-1', 'frl-2'],
  // Nest's references are guards (a guard that returns true, one that also sets the 2 headers);
  // the peer is @nestjs/throttler (`ntl`) with its in-memory storage, one throttler per policy.
  'nest-express': ['none', 'control', 'noop', 'headers', 'sluice-1', 'sluice-2', 'quiet-1', 'ntl-1', 'ntl-2'],
  'nest-fastify': ['none', 'control', 'noop', 'headers', 'sluice-1', 'sluice-2', 'quiet-1', 'ntl-1', 'ntl-2'],
}

/** How the reports name each variant. */
export const VARIANT_LABELS: Record<Variant, string> = {
  none: 'none',
  control: 'control: none again, in another process',
  noop: 'reference: a middleware that does nothing',
  headers: 'reference: a middleware that sets 2 constant headers',
  'headers-prop': 'reference: 2 constant headers and a constant req.rateLimit',
  'sluice-1': 'sluice, 1 policy',
  'sluice-2': 'sluice, 2 policies',
  'quiet-1': 'sluice, 1 policy, headers: false',
  'legacy-1': "sluice, 1 policy, headers: 'legacy' (X-RateLimit-*, as @fastify/rate-limit sends)",
  'erl-1': 'express-rate-limit, 1 window',
  'erl-2': 'express-rate-limit, 2 windows',
  'krl-1': 'koa-ratelimit (memory), 1 window',
  'krl-2': 'koa-ratelimit (memory), 2 windows',
  'hrl-1': 'hono-rate-limiter, 1 window',
  'hrl-2': 'hono-rate-limiter, 2 windows',
  'frl-1': '@fastify/rate-limit, 1 window',
  'frl-2': '@fastify/rate-limit, 2 windows',
  'ntl-1': '@nestjs/throttler, 1 throttler',
  'ntl-2': '@nestjs/throttler, 2 throttlers',
}

/** What the `headers` reference middleware sets: sluice's draft-11 pair for one policy, as constants. */
export const CONSTANT_HEADERS = [
  ['RateLimit-Policy', '"1000000-per-1m";q=1000000;w=60'],
  ['RateLimit', '"1000000-per-1m";r=999999;t=60'],
] as const

/**
 * High enough that nothing is denied: the benchmark measures deciding and writing headers, not
 * short-circuiting with 429s. Spread over CLIENTS keys, each key sees far less than either limit.
 */
export const LIMITS = [
  { limit: 1_000_000, window: 60_000 },
  { limit: 100_000, window: 1_000 },
] as const

/** Requests carry one of this many client ids in CLIENT_HEADER, the limiters' key. */
export const CLIENTS = 1024
export const CLIENT_HEADER = 'x-client-id'
export const BODY = 'Hello, world!'

/** `quiet-1` is `sluice-1` with `headers: false` (the decision's cost without the headers'), `legacy-1` with `headers: 'legacy'`. */
export const headersFor = (variant: Variant) =>
  variant === 'quiet-1' ? false : variant === 'legacy-1' ? ('legacy' as const) : undefined

/** The policies a variant enforces: none, the first, or both. */
export function limitsFor(variant: Variant): (typeof LIMITS)[number][] {
  return LIMITS.slice(0, variant.endsWith('-2') ? 2 : variant.endsWith('-1') ? 1 : 0)
}

/** Whether a variant is one of sluice's rows (its `rateLimit()` middleware). */
export const isSluice = (variant: Variant) =>
  variant === 'sluice-1' || variant === 'sluice-2' || variant === 'quiet-1' || variant === 'legacy-1'

/** The variant a server was started with (its first argument), checked against VARIANTS. */
export function variantArg(framework: Framework): Variant {
  const variant = process.argv[2] as Variant
  if (!VARIANTS[framework].includes(variant)) throw new Error(`unknown ${framework} variant: ${process.argv[2]}`)
  return variant
}

/**
 * How a server tells the runner its port. It then answers every IPC message with its CPU time
 * so far (`process.cpuUsage()`, µs, all threads): finer than /proc's clock ticks.
 */
export function listening(port: number): void {
  process.on('message', () => process.send?.(process.cpuUsage()))
  console.log(`listening ${port}`)
}

/**
 * tsx's loader for a server. Nest's servers take its ESM hook only: with tsx's require hook,
 * @nestjs/throttler (CommonJS) would get a second, transpiled copy of @nestjs/core (ESM only), whose
 * Reflector Nest cannot inject into ThrottlerGuard; Node's own require() of ESM shares the one copy.
 */
export const loaderFor = (framework: Framework) => (framework.startsWith('nest-') ? 'tsx/esm' : 'tsx')
