import { seededRandom } from '@sluice/core/testing'
/**
 * Seeded synthetic traffic for the accuracy bench: each client is a list of request times (whole
 * ms, ascending) at an offered rate given as a multiple of the limit. Same seed, same traffic.
 */

export type Shape = 'steady' | 'poisson' | 'bursty' | 'on-off'

export interface ClientSpec {
  readonly shape: Shape
  /** Offered requests per window, as a multiple of the limit. */
  readonly rate: number
}

export interface Client extends ClientSpec {
  readonly key: string
  readonly times: readonly number[]
}

export interface Trace {
  readonly name: string
  readonly clients: readonly Client[]
  readonly duration: number
}

/** Requests per burst on average, for the bursty shape; a burst's requests come 0–50 ms apart. */
const MEAN_BURST = 20
/** on-off: Poisson for 30 s, silent for 90 s (the offered rate is averaged over both). */
const ON_MS = 30_000
const OFF_MS = 90_000

/** Request times of one client over [0, duration), for a policy of `limit` per `window` ms. */
export function arrivals(spec: ClientSpec, limit: number, window: number, duration: number, random: () => number) {
  const perMs = (spec.rate * limit) / window
  const exp = (mean: number) => -Math.log(1 - random()) * mean
  const times: number[] = []
  const push = (t: number) => {
    if (t < duration) times.push(Math.floor(t))
  }
  switch (spec.shape) {
    case 'steady': {
      const gap = 1 / perMs
      for (let t = random() * gap; t < duration; t += gap) push(t)
      break
    }
    case 'poisson':
      for (let t = exp(1 / perMs); t < duration; t += exp(1 / perMs)) push(t)
      break
    case 'bursty':
      for (let t = exp(MEAN_BURST / perMs); t < duration; t += exp(MEAN_BURST / perMs)) {
        // Geometric burst size with mean MEAN_BURST.
        const size = 1 + Math.floor(Math.log(1 - random()) / Math.log(1 - 1 / MEAN_BURST))
        let at = t
        for (let i = 0; i < size; i++, at += random() * 50) push(at)
      }
      break
    case 'on-off': {
      const onRate = (perMs * (ON_MS + OFF_MS)) / ON_MS
      const phase = random() * (ON_MS + OFF_MS)
      for (let t = exp(1 / onRate); t < duration; t += exp(1 / onRate)) {
        if ((t + phase) % (ON_MS + OFF_MS) < ON_MS) push(t)
      }
      break
    }
  }
  times.sort((a, b) => a - b)
  return times
}

/** `count` rates spread evenly (on a log scale when `log`) from `low` to `high` times the limit. */
export function spread(count: number, low: number, high: number, log = false): number[] {
  return Array.from({ length: count }, (_, i) => {
    const f = count === 1 ? 0 : i / (count - 1)
    return log ? low * (high / low) ** f : low + (high - low) * f
  })
}

export function buildTrace(
  name: string,
  specs: readonly ClientSpec[],
  limit: number,
  window: number,
  duration: number,
  seed: number,
): Trace {
  const random = seededRandom(seed)
  const clients = specs.map((spec, i) => ({
    ...spec,
    key: `${name}:${i}`,
    times: arrivals(spec, limit, window, duration, random),
  }))
  return { name, clients, duration }
}

/**
 * The bench's traces. `scale` multiplies the client counts (1 keeps the whole run near a minute).
 * The "issue's mix" is issue 17's trace: 400 Poisson clients at 0.1–1.2×.
 */
export function standardTraces(limit: number, window: number, duration: number, scale: number, seed: number): Trace[] {
  const n = (count: number) => Math.max(1, Math.round(count * scale))
  const of = (shape: Shape, rates: number[]) => rates.map((rate) => ({ shape, rate }))
  const random = seededRandom(seed ^ 0x5bd1e995)
  // Cloudflare's traffic: most sources far below their limit, a few above it.
  const cloudflare = [
    ...spread(n(396), 0.002, 0.3, true).map((rate) => ({ shape: 'poisson' as const, rate })),
    ...spread(n(4), 1, 4, true).map((rate) => ({
      shape: random() < 0.5 ? ('bursty' as const) : ('poisson' as const),
      rate,
    })),
  ]
  const defs: [string, ClientSpec[]][] = [
    ['steady, 0.25–4×', of('steady', spread(n(24), 0.25, 4, true))],
    ['Poisson, 0.1–1.2× (issue’s mix)', of('poisson', spread(n(400), 0.1, 1.2))],
    ['Poisson, 0.1–10×', of('poisson', spread(n(30), 0.1, 10, true))],
    ['bursty, 0.25–4×', of('bursty', spread(n(30), 0.25, 4, true))],
    ['on-off 30 s/90 s, 0.25–4×', of('on-off', spread(n(30), 0.25, 4, true))],
    ['Cloudflare-shaped: 99 % at 0.002–0.3×, 1 % at 1–4×', cloudflare],
  ]
  return defs.map(([name, specs], i) => buildTrace(name, specs, limit, window, duration, seed + i * 7919))
}
