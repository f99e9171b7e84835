import { didYouMean } from '../diagnostics/did-you-mean.js'
import { ConfigError } from '../diagnostics/errors.js'
import { FOREIGN_POLICY_OPTION_HINTS } from '../diagnostics/known-options.js'
import { type CalendarRule, calendarRuleOf } from './calendar.js'
import {
  DURATION_UNITS_TEXT,
  type DurationUnit,
  durationHint,
  parseDurationString,
  toMilliseconds,
} from './duration.js'

/** The algorithm names a policy accepts, `sliding-window` being the default. */
export const ALGORITHMS = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const
/** One of `ALGORITHMS`: `'fixed-window' | 'sliding-window' | 'sliding-log' | 'token-bucket' | 'gcra'`. */
export type AlgorithmName = (typeof ALGORITHMS)[number]

/** Shaping (delaying instead of rejecting) needs a schedule that can be reserved ahead. */
const SHAPING_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set(['gcra', 'token-bucket'])
const BURST_ALGORITHMS = SHAPING_ALGORITHMS
/** Warm-up is a rate that rises: the algorithms that meter a rate. */
const WARMUP_ALGORITHMS = SHAPING_ALGORITHMS
/** Guava's and Sentinel's cold factor: a cold key admits a third of the rate. */
const DEFAULT_COLD_FACTOR = 3

/** A sliding log keeps one entry per admitted request; beyond this, use `sliding-window`. */
export const MAX_SLIDING_LOG_LIMIT = 10_000
/** Sub-windows of a sliding window; more buys little accuracy for linear memory. */
export const MAX_PRECISION = 60
/**
 * Sub-windows of a sliding window when `precision` is not given. Measured (bench:accuracy): on
 * Poisson clients at 0.1–1.2× a 100/min limit the most admitted in a minute falls from 135 with
 * one sub-window to 106 with ten, for 72 more bytes per key in Redis and none in a MemoryStore.
 */
export const DEFAULT_PRECISION = 10

/** Where a fixed window starts: aligned to the clock, or at each key's first request. */
export type WindowStart = 'clock' | 'first-request'

const WINDOW_STARTS: readonly WindowStart[] = ['clock', 'first-request']

/** A policy as an object; the shorthand string `'100/min'` is `{ limit: 100, window: '1min' }`. */
export interface PolicyOptions {
  /** Requests (cost units) admitted per window. */
  limit: number
  /** Milliseconds, or a duration string such as `'1m'`. Not with `period`. */
  window?: number | string
  /**
   * A calendar period instead of a window: a fixed window from local midnight of the day, Monday,
   * the 1st of the month or 1 January in `timeZone` (or the `anchor`'s weekday, day or date).
   */
  period?: 'day' | 'week' | 'month' | 'year'
  /** With `period`: the IANA zone the calendar is read in. Default `'UTC'`. */
  timeZone?: string
  /**
   * With `period`: the date the cycle is anchored to (a billing day): a `Date`, epoch ms or
   * `'YYYY-MM-DD'`, or a function of the key giving one (for example from the customer's record).
   */
  anchor?: Date | number | string | ((key: string) => Date | number | string)
  /** Default `'sliding-window'`. */
  algorithm?: AlgorithmName
  /** gcra and token-bucket: how many may arrive at once. Default `limit`. */
  burst?: number
  /**
   * sliding-window: sub-windows per window. Default 10 (or the largest number up to 10 that
   * divides the window into whole ms); 1 is Cloudflare's two-counter form.
   */
  precision?: number
  /** gcra and token-bucket: delay a request up to this long instead of rejecting it. */
  maxDelay?: number | string
  /**
   * Once this policy denies a request, keep the key denied for this long (rate-limiter-flexible's
   * blockDuration; the login brute-force recipe: `{ limit: 5, window: '15m', blockFor: '1h' }`).
   * Default 0: no block.
   */
  blockFor?: number | string
  /**
   * fixed-window: where each key's windows start. `'clock'` (default): at multiples of the window
   * since the epoch, the same instants for every key. `'first-request'`: at the key's first request,
   * and again at its first request after a window has ended (rate-limiter-flexible's windows; seed
   * 001's "simple window"). Not with `period`, whose windows start at the calendar's bounds.
   */
  start?: WindowStart
  /**
   * gcra and token-bucket: a key that has been idle (its bucket full, its schedule empty) is cold
   * and admits `limit / coldFactor` per window, rising linearly to the full rate over this much
   * sustained use (Guava's `SmoothWarmingUp`, Sentinel's warm-up). A new key starts cold; idle for
   * half of it, a key starts to cool. Default 0: no warm-up.
   */
  warmup?: number | string
  /** With `warmup`: how many times slower a cold key admits than a warm one. Above 1; default 3. */
  coldFactor?: number
  /**
   * Shown in headers and decisions. Default e.g. `"100-per-1m"`. A policy given a name keeps its
   * stored state under that name (with its window, algorithm and precision), not under its limit:
   * a plan change from `100/day` to `1000/day` then reads the same usage against the new limit
   * (docs/plan-changes-and-settle.md).
   */
  name?: string
}

/** A shorthand such as `'100/min'` or `'10/5m'`, or the object form. */
export type PolicyInput = string | PolicyOptions

/** A window as a shorthand writes it: `'min'`, `'5m'`, `'15 minutes'`. */
export type DurationText = DurationUnit | `${number}${DurationUnit}` | `${number} ${DurationUnit}`

/** The shape of a shorthand policy, `'<limit>/<window>'`: what a string literal in `limits` must match. */
export type ShorthandPolicy = `${number}/${DurationText}`

/** What a string literal that is no shorthand is checked against, so that the error says why. */
export interface NotAShorthand {
  'is not a shorthand "<limit>/<window>" such as "100/min", "2/s" or "10/5m"': true
}

type CheckedPolicy<P> = P extends string
  ? string extends P
    ? P // a string known only at run time: checked then
    : P extends ShorthandPolicy
      ? P
      : NotAShorthand
  : P

/**
 * `limits` as a caller wrote them, checked where TypeScript can tell: a string literal that is no
 * shorthand (`'100 per min'`, `'100/fortnight'`) fails to compile, a `string` from a variable
 * passes (and is checked at run time). Used as `limits: L & CheckedLimits<L>`.
 */
export type CheckedLimits<L> = L extends readonly unknown[]
  ? { readonly [K in keyof L]: L[K] & CheckedPolicy<L[K]> }
  : CheckedPolicy<L>

/** A validated policy; every time is in whole milliseconds. */
export interface Policy {
  readonly name: string
  readonly limit: number
  readonly window: number
  readonly algorithm: AlgorithmName
  readonly burst: number
  readonly precision: number
  readonly maxDelay: number
  /** Milliseconds a key stays denied once this policy denied it; 0 for none. */
  readonly blockFor: number
  /**
   * Identifies the policy's stored state: two policies with the same id share counts. A named
   * policy's id is its name, window, algorithm and precision (its limit may change under it);
   * an unnamed one's is every number that shapes its state.
   */
  readonly id: string
  /**
   * fixed-window: where windows start, in ms after a multiple of `window` since the epoch (0 for
   * a plain fixed window; a calendar period's start modulo its length once resolved).
   */
  readonly offset: number
  /** A calendar period (`period`), resolved per request into a fixed window; undefined for others. */
  readonly calendar: CalendarRule | undefined
  /** fixed-window: where each key's windows start (`PolicyOptions.start`); `'clock'` for the others. */
  readonly start: WindowStart
  /** gcra and token-bucket: milliseconds of sustained use from cold to the full rate; 0 for no warm-up. */
  readonly warmup: number
  /** With `warmup`: a cold key admits `limit / coldFactor` per window (`DEFAULT_COLD_FACTOR` unless given). */
  readonly coldFactor: number
}

/** The policies of one limiter, in the order given, and an id that names the set in a store. */
export interface PolicySet {
  readonly id: string
  readonly policies: readonly Policy[]
}

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'limit',
  'window',
  'algorithm',
  'burst',
  'precision',
  'maxDelay',
  'blockFor',
  'start',
  'warmup',
  'coldFactor',
  'name',
  'period',
  'timeZone',
  'anchor',
])

/** Validates and normalises one policy or a list (`limits`) into a `PolicySet`; throws a `ConfigError` naming `field[i]`. */
export function parsePolicies(input: unknown, field = 'limits'): PolicySet {
  const list =
    typeof input === 'string' || (input !== null && typeof input === 'object' && !Array.isArray(input))
      ? [input]
      : input
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(field, input, 'must be a policy or a non-empty array of policies, such as ["100/min", "2/s"]')
  }
  const policies = list.map((item, index) => parsePolicy(item, `${field}[${index}]`))
  const names = new Set<string>()
  for (const [index, policy] of policies.entries()) {
    if (names.has(policy.name)) {
      throw new ConfigError(
        `${field}[${index}].name`,
        policy.name,
        'must be unique among the limits; give one a `name`',
      )
    }
    names.add(policy.name)
  }
  return policySetOf(policies)
}

/**
 * A set of these policies, its id made of theirs unless given; a store that derives sets of its
 * own makes them with this. The set and each policy are frozen, the array only by its type: V8
 * reads a frozen array's elements through a generic lookup rather than in line, which cost every
 * decision a few per cent.
 */
export function policySetOf(policies: Policy[], id = policies.map((p) => p.id).join('|')): PolicySet {
  return Object.freeze({ id, policies })
}

/** Validates and normalises one shorthand string or policy object; throws a `ConfigError` naming `field`. */
export function parsePolicy(input: unknown, field = 'limit'): Policy {
  if (typeof input === 'string') return parseShorthand(input, field)
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ConfigError(field, input, 'must be a shorthand such as "100/min" or an object { limit, window }')
  }
  const options = input as Record<string, unknown>
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      const known = [...OPTION_KEYS]
      const hint = FOREIGN_POLICY_OPTION_HINTS[key] ?? didYouMeanHint(key, known)
      throw new ConfigError(
        `${field}.${key}`,
        options[key],
        `is not a policy option${hint === undefined ? '' : `: ${hint}`} (known: ${known.join(', ')})`,
      )
    }
  }
  return buildPolicy(options, field)
}

function parseShorthand(text: string, field: string): Policy {
  const match = /^\s*(\S+?)\s*\/\s*(\S.*?)\s*$/.exec(text)
  const limit = match && /^\d+$/.test(match[1] as string) ? Number(match[1]) : undefined
  const window = match ? parseDurationString(match[2] as string) : undefined
  if (limit === undefined || window === undefined) {
    throw new ConfigError(
      field,
      text,
      `is not a shorthand policy: write "<limit>/<window>" such as "100/min", "2/s" or "10/5m"${
        match ? shorthandHint(match[1] as string, match[2] as string, window) : ''
      } (units: ${DURATION_UNITS_TEXT})`,
    )
  }
  return buildPolicy({ limit, window }, field)
}

function didYouMeanHint(typed: string, known: readonly string[]): string | undefined {
  const closest = didYouMean(typed, known)
  return closest === undefined ? undefined : `did you mean ${closest}?`
}

/**
 * What is wrong with a shorthand that did not parse: the window's unit when the window is the
 * problem, else the limit, which counts whole requests written in digits.
 */
function shorthandHint(limitText: string, windowText: string, window: number | undefined): string {
  const digits = /^\d+$/.test(limitText)
  if (window === undefined) return durationHint(windowText, digits ? limitText : 'n')
  const limit = Number(limitText)
  if (Number.isSafeInteger(limit) && limit >= 1) return `; write the limit in digits: "${limit}/${windowText}"`
  if (Number.isFinite(limit) && limit > 0) {
    // The same rate in whole requests over a longer window: 1.5/s is 3/2s.
    for (let times = 2; times <= 1000; times++) {
      const whole = Math.round(limit * times)
      if (Math.abs(whole - limit * times) < 1e-9 && Number.isSafeInteger(window * times)) {
        return `; a limit counts whole requests: "${whole}/${formatDuration(window * times)}" is the same rate`
      }
    }
  }
  return '; the limit must be a whole number of requests from 1, written in digits'
}

function buildPolicy(options: Record<string, unknown>, field: string): Policy {
  const limit = headerInteger(`${field}.limit`, positiveInteger(`${field}.limit`, options.limit))
  const calendar = calendarRuleOf(options, field)
  const window = calendar?.nominalWindow ?? toMilliseconds(`${field}.window`, options.window)
  const algorithm = options.algorithm ?? (calendar === undefined ? 'sliding-window' : 'fixed-window')
  if (!ALGORITHMS.includes(algorithm as AlgorithmName)) {
    throw new ConfigError(`${field}.algorithm`, algorithm, `must be one of ${ALGORITHMS.join(', ')}`)
  }
  const algo = algorithm as AlgorithmName

  if (options.burst !== undefined && !BURST_ALGORITHMS.has(algo)) {
    throw new ConfigError(`${field}.burst`, options.burst, `applies to gcra and token-bucket only, not ${algo}`)
  }
  const burst =
    options.burst === undefined
      ? limit
      : headerInteger(`${field}.burst`, positiveInteger(`${field}.burst`, options.burst))

  if (options.precision !== undefined && algo !== 'sliding-window') {
    throw new ConfigError(`${field}.precision`, options.precision, `applies to sliding-window only, not ${algo}`)
  }
  const precision =
    options.precision !== undefined
      ? positiveInteger(`${field}.precision`, options.precision)
      : algo === 'sliding-window'
        ? defaultPrecision(window)
        : 1
  if (precision > MAX_PRECISION) {
    throw new ConfigError(`${field}.precision`, precision, `must be at most ${MAX_PRECISION}`)
  }
  if (window % precision !== 0) {
    throw new ConfigError(
      `${field}.precision`,
      precision,
      `must divide the window (${window} ms) into whole milliseconds`,
    )
  }

  if (options.maxDelay !== undefined && !SHAPING_ALGORITHMS.has(algo)) {
    throw new ConfigError(`${field}.maxDelay`, options.maxDelay, `applies to gcra and token-bucket only, not ${algo}`)
  }
  const maxDelay =
    options.maxDelay === undefined ? 0 : toMilliseconds(`${field}.maxDelay`, options.maxDelay, { allowZero: true })

  const blockFor =
    options.blockFor === undefined ? 0 : toMilliseconds(`${field}.blockFor`, options.blockFor, { allowZero: true })

  const start = windowStartOf(options.start, algo, calendar, field)
  const { warmup, coldFactor } = warmupOf(options, algo, field)

  if (algo === 'sliding-log' && limit > MAX_SLIDING_LOG_LIMIT) {
    throw new ConfigError(
      `${field}.limit`,
      limit,
      `must be at most ${MAX_SLIDING_LOG_LIMIT} for sliding-log, which stores one timestamp per request; use sliding-window for large limits`,
    )
  }

  if (algo === 'token-bucket' && burst * window > Number.MAX_SAFE_INTEGER) {
    throw new ConfigError(
      `${field}.burst`,
      burst,
      `times the window (${window} ms) must stay below 2^53 for token-bucket, which counts in exact integers; use gcra for a bucket this large`,
    )
  }

  const name =
    options.name !== undefined
      ? options.name
      : `${limit}-per-${calendar === undefined ? formatDuration(window) : calendar.period}`
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new ConfigError(`${field}.name`, name, 'must be a non-empty string of letters, digits and _ . : * -')
  }
  return Object.freeze({
    name,
    limit,
    window,
    algorithm: algo,
    burst,
    precision,
    maxDelay,
    blockFor,
    id: blockId(
      warmupId(
        startId(
          options.name === undefined
            ? calendar === undefined
              ? policyId(algo, limit, window, burst, precision, maxDelay)
              : policyId(algo, limit, calendar.id)
            : namedId(name, algo, calendar === undefined ? window : calendar.id, precision),
          start,
        ),
        warmup,
        coldFactor,
      ),
      blockFor,
    ),
    offset: 0,
    calendar,
    start,
    warmup,
    coldFactor,
  })
}

/** `warmup` and `coldFactor` checked: a positive duration on gcra or token-bucket, a factor above 1 with it. */
function warmupOf(
  options: Record<string, unknown>,
  algorithm: AlgorithmName,
  field: string,
): { warmup: number; coldFactor: number } {
  if (options.warmup === undefined) {
    if (options.coldFactor !== undefined) {
      throw new ConfigError(`${field}.coldFactor`, options.coldFactor, 'applies only with warmup; give warmup too')
    }
    return { warmup: 0, coldFactor: DEFAULT_COLD_FACTOR }
  }
  if (!WARMUP_ALGORITHMS.has(algorithm)) {
    throw new ConfigError(`${field}.warmup`, options.warmup, `applies to gcra and token-bucket only, not ${algorithm}`)
  }
  const warmup = toMilliseconds(`${field}.warmup`, options.warmup)
  const coldFactor = options.coldFactor ?? DEFAULT_COLD_FACTOR
  if (typeof coldFactor !== 'number' || !Number.isFinite(coldFactor) || coldFactor <= 1) {
    throw new ConfigError(
      `${field}.coldFactor`,
      coldFactor,
      'must be a number above 1 (a cold key admits limit / coldFactor); default 3',
    )
  }
  return { warmup, coldFactor }
}

/** A warming policy keeps its own state (with its coldness in it): ids without warm-up are unchanged. */
function warmupId(id: string, warmup: number, coldFactor: number): string {
  return warmup === 0 ? id : `${id}:warm${warmup}x${coldFactor}`
}

/** `start` checked: one of WINDOW_STARTS, and `'first-request'` only on a fixed window without `period`. */
function windowStartOf(
  value: unknown,
  algorithm: AlgorithmName,
  calendar: CalendarRule | undefined,
  field: string,
): WindowStart {
  if (value === undefined) return 'clock'
  if (!WINDOW_STARTS.includes(value as WindowStart)) {
    throw new ConfigError(`${field}.start`, value, `must be one of ${WINDOW_STARTS.map((s) => `'${s}'`).join(', ')}`)
  }
  if (algorithm !== 'fixed-window') {
    throw new ConfigError(`${field}.start`, value, `applies to fixed-window only, not ${algorithm}`)
  }
  if (value === 'first-request' && calendar !== undefined) {
    throw new ConfigError(
      `${field}.start`,
      value,
      `cannot go with period '${calendar.period}', whose windows start at the calendar's bounds; use window instead of period for windows from each key's first request`,
    )
  }
  return value as WindowStart
}

/** A first-request window keeps its own state: aligned and unaligned starts never mix. */
function startId(id: string, start: WindowStart): string {
  return start === 'clock' ? id : `${id}:first`
}

const NAME_PATTERN = /^[A-Za-z0-9_.:*-]+$/
/** Marks a named policy's id; no name can hold it (see NAME_PATTERN), so no unnamed id can clash. */
const NAMED_ID_MARK = '@'

/** The id of a policy stored under its name: what shapes its state, but not its limit or burst. */
function namedId(name: string, algorithm: AlgorithmName, window: number | string, precision: number): string {
  return `${NAMED_ID_MARK}${name}:${policyId(algorithm, window, precision)}`
}

/** Whether the policy keeps its state under its name (so its limit may change under that state). */
export function isNamed(policy: Policy): boolean {
  return policy.id.startsWith(NAMED_ID_MARK)
}

/**
 * The largest Structured Field Integer (RFC 9651 §3.3.1: at most 15 digits). A limit (`q`) or a
 * remaining count (`r`, up to burst) beyond it could not be written in the RateLimit headers,
 * so such a policy is rejected rather than clamped in the header, which would misstate it.
 */
export const MAX_HEADER_INTEGER = 999_999_999_999_999

export function headerInteger(field: string, value: number): number {
  if (value > MAX_HEADER_INTEGER) {
    throw new ConfigError(
      field,
      value,
      `must be at most ${MAX_HEADER_INTEGER} (15 digits, the most an RFC 9651 Integer in the RateLimit headers can carry)`,
    )
  }
  return value
}

/** DEFAULT_PRECISION, or the largest precision below it that splits the window into whole ms. */
function defaultPrecision(window: number): number {
  for (let precision = DEFAULT_PRECISION; precision > 1; precision--) {
    if (window % precision === 0) return precision
  }
  return 1
}

function positiveInteger(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(field, value, 'must be a positive whole number')
  }
  return value
}

/** 60000 → "1m", 90000 → "90s", 1500 → "1500ms": the largest unit that divides evenly. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}

/**
 * The largest cost a policy can ever admit in one request; a cost above it would be
 * denied forever, so the limiter rejects it as a mistake instead.
 */
export function capacityOf(policy: Policy): number {
  if (!SHAPING_ALGORITHMS.has(policy.algorithm)) return policy.limit
  return Math.floor(policy.burst + (policy.maxDelay * policy.limit) / policy.window)
}

/** The policy with `maxDelay` as its shaping budget, for limiters that set one for all. */
export function withMaxDelay(policy: Policy, maxDelay: number): Policy {
  const { algorithm, limit, window, burst, precision } = policy
  const id = isNamed(policy)
    ? policy.id
    : blockId(
        warmupId(policyId(algorithm, limit, window, burst, precision, maxDelay), policy.warmup, policy.coldFactor),
        policy.blockFor,
      )
  return Object.freeze({ ...policy, maxDelay, id })
}

export function supportsShaping(algorithm: AlgorithmName): boolean {
  return SHAPING_ALGORITHMS.has(algorithm)
}

function policyId(...parts: (string | number)[]): string {
  return parts.join(':')
}

/** A blocking policy keeps its own state (with the block in it): ids without a block are unchanged. */
function blockId(id: string, blockFor: number): string {
  return blockFor === 0 ? id : `${id}:block${blockFor}`
}
