import { didYouMean } from '../diagnostics/did-you-mean.js'
import { ConfigError } from '../diagnostics/errors.js'
import { assertKnownOptions } from '../diagnostics/known-options.js'
import type { Observe } from '../diagnostics/observe.js'
import { toMilliseconds } from '../policies/duration.js'
import { Aimd, type AimdOptions } from './aimd.js'
import type { LimitAlgorithm } from './algorithm.js'
import { Gradient2, type Gradient2Options } from './gradient2.js'
import { Vegas, type VegasOptions } from './vegas.js'

/** The algorithms `adaptiveConcurrency` can learn its limit with. */
export const OVERLOAD_ALGORITHMS = ['gradient2', 'vegas', 'aimd'] as const
/** One of `OVERLOAD_ALGORITHMS`. */
export type OverloadAlgorithm = (typeof OVERLOAD_ALGORITHMS)[number]

/** The timers the controller runs on: the platform's by default, a manual clock in tests and simulations. */
export interface OverloadClock {
  /** Milliseconds on a monotonic clock. */
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  /** A number in [0, 1) for the probes' jitter. Default `Math.random`. */
  random?(): number
}

/**
 * Node's `monitorEventLoopDelay()` histogram as the controller reads it (no `node:` import in
 * core): the adapters for Node make one; on other runtimes pass nothing.
 */
export interface DelayHistogram {
  /** A percentile of the delays recorded since the last reset, in nanoseconds. */
  percentile(percentile: number): number
  reset(): void
}

/** A request class: its name, and the share of the limit kept for it alone. */
export interface OverloadClass {
  readonly name: string
  /** The fraction of the limit (0–1) only this class may use. Default 0. */
  readonly reserve?: number
}

/** Options of `createAdaptiveLimiter` (and of every `adaptiveConcurrency()` middleware). */
export interface AdaptiveLimiterOptions {
  /** How the limit is learned. Default `'gradient2'`. */
  algorithm?:
    | OverloadAlgorithm
    | ({ name: 'gradient2' } & Gradient2Options)
    | ({ name: 'vegas' } & VegasOptions)
    | ({ name: 'aimd' } & AimdOptions)
  /** The limit before anything is learned. Default 20 (within `min` and `max`). */
  initial?: number
  /** The limit never falls below this. Default 4. */
  min?: number
  /** The limit never rises above this. Default 1000. */
  max?: number
  /**
   * How long samples are gathered before the limit is updated (a duration); a window also waits
   * for `windowSamples` samples. Default `'100ms'`.
   */
  window?: number | string
  /** Samples a window needs before it updates the limit. Default 10. */
  windowSamples?: number
  /**
   * How the no-load latency is measured again, as Envoy's adaptive concurrency filter does: every
   * `every` (jittered by up to 10 % so a fleet does not probe at once), the limit is held at
   * `min` until `samples` requests have finished; their median becomes the no-load latency and
   * the limit goes back to where it was. False never probes (after a long slow period only
   * Gradient2's own decay brings the limit back). Default `{ every: '60s', samples: 20 }`.
   */
  probe?: { every?: number | string; samples?: number } | false
  /**
   * The classes of work, most critical first (`'critical'`, `'default'`, `'sheddable'`, …), each
   * with an optional `reserve`. The sum of reserves is at most 1. Waiting work is admitted most
   * critical first, and a full queue refuses its least critical waiter to make room for a more
   * critical one. Default: one class, `'default'`.
   */
  classes?: readonly (string | OverloadClass)[]
  /**
   * Work over the limit waits here for a slot, at most `size` at once and `maxWait` each, before
   * it is refused; false refuses at once. Default `{ size: 10, maxWait: '50ms' }`.
   */
  queue?: { size?: number; maxWait?: number | string } | false
  /**
   * A second signal besides latency: when the p99 event-loop delay since the last update exceeds
   * `threshold`, the limit is cut (×0.9) whatever the latency says. The Node adapters make the
   * histogram when it is left out.
   */
  eventLoopDelay?: { histogram: DelayHistogram; threshold: number | string }
  /** The name in events (and in headers and problem bodies of the middleware). Default `'adaptive'`. */
  name?: string
  /** Called with `overload` and `overload-limit` events (see `ObserveEvent`). */
  observe?: Observe
  /** Timers and time source. Default: `performance.now()` and the global timers. */
  clock?: OverloadClock
}

export const ADAPTIVE_LIMITER_OPTIONS = [
  'algorithm',
  'initial',
  'min',
  'max',
  'window',
  'windowSamples',
  'probe',
  'classes',
  'queue',
  'eventLoopDelay',
  'name',
  'observe',
  'clock',
] as const

export interface ParsedOptions {
  readonly algorithmName: OverloadAlgorithm
  readonly algorithm: LimitAlgorithm
  readonly initial: number
  readonly min: number
  readonly max: number
  readonly windowMs: number
  readonly windowSamples: number
  readonly probe: { readonly everyMs: number; readonly samples: number } | undefined
  readonly classes: readonly Required<OverloadClass>[]
  readonly queue: { readonly size: number; readonly maxWaitMs: number }
  readonly eventLoopDelay: { readonly histogram: DelayHistogram; readonly thresholdMs: number } | undefined
  readonly name: string
  readonly clock: OverloadClock
}

const DEFAULT_CLOCK: OverloadClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

function wholeNumber(field: string, value: unknown, least: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least) {
    throw new ConfigError(field, value, `must be a whole number of at least ${least}`)
  }
  return value
}

function fraction(field: string, value: unknown, { above, atMost }: { above: number; atMost: number }): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= above || value > atMost) {
    throw new ConfigError(field, value, `must be a number above ${above} and at most ${atMost}`)
  }
  return value
}

function plainObject(field: string, value: unknown, example: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(field, value, `must be an object such as ${example}`)
  }
  return value as Record<string, unknown>
}

function parseAlgorithm(value: unknown): { name: OverloadAlgorithm; algorithm: LimitAlgorithm } {
  const raw =
    typeof value === 'string'
      ? { name: value }
      : plainObject('algorithm', value ?? { name: 'gradient2' }, "{ name: 'vegas' }")
  const name = raw.name
  if (!(OVERLOAD_ALGORITHMS as readonly unknown[]).includes(name)) {
    const field = typeof value === 'string' ? 'algorithm' : 'algorithm.name'
    const closest = typeof name === 'string' ? didYouMean(name, OVERLOAD_ALGORITHMS) : undefined
    throw new ConfigError(
      field,
      name,
      `must be one of ${OVERLOAD_ALGORITHMS.map((a) => `'${a}'`).join(', ')}${closest ? `: did you mean '${closest}'?` : ''}`,
    )
  }
  const at = (option: string) => `algorithm.${option}`
  switch (name as OverloadAlgorithm) {
    case 'gradient2':
      assertKnownOptions(raw, ['name', 'tolerance', 'smoothing', 'longWindow'], "algorithm { name: 'gradient2' }")
      return {
        name: 'gradient2',
        algorithm: new Gradient2({
          tolerance:
            raw.tolerance === undefined ? 1.3 : fraction(at('tolerance'), raw.tolerance, { above: 0, atMost: 10 }),
          smoothing:
            raw.smoothing === undefined ? 0.2 : fraction(at('smoothing'), raw.smoothing, { above: 0, atMost: 1 }),
          longWindow: raw.longWindow === undefined ? 600 : wholeNumber(at('longWindow'), raw.longWindow, 1),
        }),
      }
    case 'vegas':
      assertKnownOptions(raw, ['name', 'smoothing'], "algorithm { name: 'vegas' }")
      return {
        name: 'vegas',
        algorithm: new Vegas({
          smoothing:
            raw.smoothing === undefined ? 1 : fraction(at('smoothing'), raw.smoothing, { above: 0, atMost: 1 }),
        }),
      }
    case 'aimd':
      assertKnownOptions(raw, ['name', 'backoff', 'tolerance'], "algorithm { name: 'aimd' }")
      return {
        name: 'aimd',
        algorithm: new Aimd({
          backoff: raw.backoff === undefined ? 0.9 : fraction(at('backoff'), raw.backoff, { above: 0, atMost: 0.99 }),
          tolerance:
            raw.tolerance === undefined ? 1.5 : fraction(at('tolerance'), raw.tolerance, { above: 1, atMost: 100 }),
        }),
      }
  }
}

function parseClasses(value: unknown): Required<OverloadClass>[] {
  if (value === undefined) return [{ name: 'default', reserve: 0 }]
  if (!Array.isArray(value) || value.length === 0) {
    throw new ConfigError('classes', value, "must be a non-empty array such as ['critical', 'default', 'sheddable']")
  }
  const classes: Required<OverloadClass>[] = []
  let reserved = 0
  value.forEach((entry: unknown, index) => {
    const field = `classes[${index}]`
    const raw =
      typeof entry === 'string' ? { name: entry } : plainObject(field, entry, "{ name: 'critical', reserve: 0.2 }")
    assertKnownOptions(raw, ['name', 'reserve'], field)
    const { name } = raw
    if (typeof name !== 'string' || name === '')
      throw new ConfigError(`${field}.name`, name, 'must be a non-empty string')
    if (classes.some((c) => c.name === name))
      throw new ConfigError(`${field}.name`, name, 'names a class listed before')
    const reserve = raw.reserve ?? 0
    if (typeof reserve !== 'number' || !Number.isFinite(reserve) || reserve < 0 || reserve > 1) {
      throw new ConfigError(`${field}.reserve`, reserve, 'must be a share of the limit from 0 to 1 (1 is 100 %)')
    }
    reserved += reserve
    classes.push({ name, reserve })
  })
  if (reserved > 1 + 1e-9) {
    throw new ConfigError(
      'classes',
      value,
      `reserve ${Math.round(reserved * 100)} % of the limit together; at most 100 % can be reserved`,
    )
  }
  return classes
}

function parseQueue(value: unknown): ParsedOptions['queue'] {
  if (value === false) return { size: 0, maxWaitMs: 0 }
  const raw = plainObject('queue', value ?? {}, "{ size: 10, maxWait: '50ms' }")
  assertKnownOptions(raw, ['size', 'maxWait'], 'queue')
  return {
    size: raw.size === undefined ? 10 : wholeNumber('queue.size', raw.size, 0),
    maxWaitMs: raw.maxWait === undefined ? 50 : toMilliseconds('queue.maxWait', raw.maxWait),
  }
}

function parseProbe(value: unknown): ParsedOptions['probe'] {
  if (value === false) return undefined
  const raw = plainObject('probe', value ?? {}, "{ every: '60s', samples: 20 }")
  assertKnownOptions(raw, ['every', 'samples'], 'probe')
  return {
    everyMs: raw.every === undefined ? 60_000 : toMilliseconds('probe.every', raw.every),
    samples: raw.samples === undefined ? 20 : wholeNumber('probe.samples', raw.samples, 1),
  }
}

function parseClock(value: unknown): OverloadClock {
  if (value === undefined) return DEFAULT_CLOCK
  const raw = plainObject('clock', value, '{ now, setTimeout, clearTimeout }')
  for (const member of ['now', 'setTimeout', 'clearTimeout']) {
    if (typeof raw[member] !== 'function') throw new ConfigError(`clock.${member}`, raw[member], 'must be a function')
  }
  return value as OverloadClock
}

function parseEventLoopDelay(value: unknown): ParsedOptions['eventLoopDelay'] {
  if (value === undefined) return undefined
  const raw = plainObject('eventLoopDelay', value, "{ histogram: monitorEventLoopDelay(), threshold: '100ms' }")
  assertKnownOptions(raw, ['histogram', 'threshold'], 'eventLoopDelay')
  const histogram = raw.histogram as Partial<DelayHistogram> | undefined
  if (
    histogram === null ||
    typeof histogram !== 'object' ||
    typeof histogram.percentile !== 'function' ||
    typeof histogram.reset !== 'function'
  ) {
    throw new ConfigError(
      'eventLoopDelay.histogram',
      histogram,
      "must be a histogram of event-loop delays: monitorEventLoopDelay() from 'node:perf_hooks', enabled",
    )
  }
  return {
    histogram: histogram as DelayHistogram,
    thresholdMs: toMilliseconds('eventLoopDelay.threshold', raw.threshold),
  }
}

/** Validates every option once, at construction; a bad one is a ConfigError naming it. */
export function parseAdaptiveOptions(
  options: AdaptiveLimiterOptions | undefined,
  known: readonly string[] = ADAPTIVE_LIMITER_OPTIONS,
  fn = 'createAdaptiveLimiter()',
): ParsedOptions {
  const raw = plainObject('options', options ?? {}, "{ algorithm: 'gradient2', max: 200 }")
  assertKnownOptions(raw, known, fn)
  const { name: algorithmName, algorithm } = parseAlgorithm(raw.algorithm)
  const min = raw.min === undefined ? 4 : wholeNumber('min', raw.min, 1)
  const max = raw.max === undefined ? 1000 : wholeNumber('max', raw.max, 1)
  if (min > max) throw new ConfigError('min', min, `must not be above max (${max})`)
  const initial = raw.initial === undefined ? Math.min(max, Math.max(min, 20)) : wholeNumber('initial', raw.initial, 1)
  if (initial < min || initial > max)
    throw new ConfigError('initial', initial, `must be within min (${min}) and max (${max})`)
  const name = raw.name ?? 'adaptive'
  if (typeof name !== 'string' || name === '') throw new ConfigError('name', name, 'must be a non-empty string')
  return {
    algorithmName,
    algorithm,
    initial,
    min,
    max,
    windowMs: raw.window === undefined ? 100 : toMilliseconds('window', raw.window),
    windowSamples: raw.windowSamples === undefined ? 10 : wholeNumber('windowSamples', raw.windowSamples, 1),
    probe: parseProbe(raw.probe),
    classes: parseClasses(raw.classes),
    queue: parseQueue(raw.queue),
    eventLoopDelay: parseEventLoopDelay(raw.eventLoopDelay),
    name,
    clock: parseClock(raw.clock),
  }
}
