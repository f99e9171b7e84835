// What the HTTP benchmark compares, shared by the runner and the servers.

export type Framework = 'express' | 'koa' | 'hono'
export type Variant = 'none' | 'sluice-1' | 'sluice-2' | 'erl-1' | 'erl-2'

/** The variants each framework runs; express-rate-limit exists for Express only. */
export const VARIANTS: Record<Framework, readonly Variant[]> = {
  express: ['none', 'sluice-1', 'sluice-2', 'erl-1', 'erl-2'],
  koa: ['none', 'sluice-1', 'sluice-2'],
  hono: ['none', 'sluice-1', 'sluice-2'],
}

export const POLICY_COUNT: Record<Variant, number> = { none: 0, 'sluice-1': 1, 'sluice-2': 2, 'erl-1': 1, 'erl-2': 2 }

/**
 * High enough that nothing is denied: the benchmark measures the cost of deciding and of the
 * headers, not of short-circuiting with 429s. With CLIENTS keys, each sees well under 1000/s.
 */
export const LIMITS = [
  { limit: 1_000_000, window: 60_000 },
  { limit: 100_000, window: 1_000 },
] as const

/** Requests carry one of this many client ids in CLIENT_HEADER, the limiters' key. */
export const CLIENTS = 1024
export const CLIENT_HEADER = 'x-client-id'

/** `<framework> <variant>` from a server's command line. */
export function parseTarget(args: readonly string[]): { framework: Framework; variant: Variant } {
  const [framework, variant] = args
  const variants: readonly string[] | undefined = VARIANTS[framework as Framework]
  if (variants === undefined || variant === undefined || !variants.includes(variant)) {
    throw new Error(`unknown benchmark target: ${args.join(' ')}`)
  }
  return { framework: framework as Framework, variant: variant as Variant }
}
