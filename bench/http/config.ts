// What the HTTP benchmark compares, shared by the runner (bench/http.bench.ts) and the servers.

export type Framework = 'express' | 'koa' | 'hono'
export type Variant = 'none' | 'sluice-1' | 'sluice-2' | 'quiet-1' | 'erl-1' | 'erl-2'

/** The variants each framework runs; express-rate-limit exists for Express only. */
export const VARIANTS: Record<Framework, readonly Variant[]> = {
  express: ['none', 'sluice-1', 'sluice-2', 'quiet-1', 'erl-1', 'erl-2'],
  koa: ['none', 'sluice-1', 'sluice-2', 'quiet-1'],
  hono: ['none', 'sluice-1', 'sluice-2', 'quiet-1'],
}

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

/** `quiet-1` is `sluice-1` with `headers: false`: the decision's cost without the headers'. */
export const headersFor = (variant: Variant) => (variant === 'quiet-1' ? false : undefined)

/** The policies a variant enforces: none, the first, or both. */
export function limitsFor(variant: Variant): (typeof LIMITS)[number][] {
  return LIMITS.slice(0, variant.endsWith('-2') ? 2 : variant.endsWith('-1') ? 1 : 0)
}

/** The variant a server was started with (its first argument), checked against VARIANTS. */
export function variantArg(framework: Framework): Variant {
  const variant = process.argv[2] as Variant
  if (!VARIANTS[framework].includes(variant)) throw new Error(`unknown ${framework} variant: ${process.argv[2]}`)
  return variant
}

/** How a server tells the runner its port. */
export function listening(port: number): void {
  console.log(`listening ${port}`)
}
