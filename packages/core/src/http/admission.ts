import { ActiveClients } from '../admission/active-clients.js'
import { ConfigError } from '../diagnostics/errors.js'
import { toMilliseconds } from '../policies/duration.js'
import { type Awaitable, andThen } from '../stores/contract.js'
import { type Adapter, assertKnownOptions, assertObject, type CommonOptions, parseCommon } from './common-options.js'
import { type HeaderEntry, retryAfterHeader, retryAfterSeconds } from './headers.js'
import { type DenyPlan, denialResponse, SKIP } from './response.js'

/** The problem type of a request refused because the service only serves clients it already knows. */
export const THROTTLING_MODE = 'urn:sluice:problem:throttling-mode'

/**
 * Leaving throttling mode needs the estimate below this share of maxActive (unless `resumeBelow`
 * says otherwise): without a gap, an estimate hovering at maxActive would flip the mode on and
 * off from one request to the next, admitting bursts of newcomers each time.
 */
export const DEFAULT_RESUME_FRACTION = 0.9

/** What the middleware exposes on each request: `req.admission`, `ctx.state.admission`, `c.get('admission')`. */
export interface AdmissionState {
  /** Whether the service is in throttling mode (only known clients are served). */
  readonly throttling: boolean
  /** Estimated distinct clients active within the window. */
  readonly active: number
  /** Whether this client made a request within the window (before this one). */
  readonly known: boolean
}

/** What `message` and `onThrottled` receive about a refused request. */
export interface AdmissionInfo extends AdmissionState {
  readonly key: string
  readonly maxActive: number
  /** Milliseconds the client is told to wait (Retry-After). */
  readonly retryAfter: number
}

/**
 * What `observe` receives: one `admission` event per decided request, and an `admission-mode`
 * event when throttling mode starts or ends. Calls are synchronous; a throw is ignored.
 */
export type AdmissionEvent =
  | {
      readonly type: 'admission'
      readonly key: string
      readonly admitted: boolean
      readonly known: boolean
      readonly throttling: boolean
      readonly active: number
    }
  | {
      readonly type: 'admission-mode'
      readonly throttling: boolean
      readonly active: number
      readonly maxActive: number
    }

/**
 * Shares a node's ActiveClients with other nodes (`RedisActiveClientsSync` in @sluice/redis).
 * `attach` is called once, when the middleware is built; the sync runs in the background and
 * never makes a request wait.
 */
export interface ActiveClientsSync {
  attach(clients: ActiveClients): void
}

/** `admissionControl()` options shared by every adapter: `maxActive`, `window`, `slots`, `key`, `sync`, …. */
export interface AdmissionControlOptions<A extends unknown[], R = unknown>
  extends Omit<CommonOptions<A, AdmissionInfo, R>, 'onLimited'> {
  /** Throttling mode starts when the estimated active clients exceed this. */
  maxActive: number
  /** Throttling mode ends when the estimate falls below this. Default 90 % of maxActive, rounded down. */
  resumeBelow?: number
  /** How long a client stays known after its last admitted request. Default '30min'. */
  window?: number | string
  /** Filters in the ring (the window's resolution). Default 30. */
  slots?: number
  /** Clients the filters are sized for. Default 2 × maxActive, so the estimate stays sharp past maxActive. */
  capacity?: number
  /** Default 0.001: the share of new clients that pass as known in throttling mode. */
  falsePositiveRate?: number
  /** Hash seed of the filters (see ActiveClientsOptions.seed); every synced node needs the same. */
  seed?: number
  /** A prebuilt ActiveClients instead of window, slots, capacity, falsePositiveRate, seed and now. */
  clients?: ActiveClients
  /** Shares the active clients between processes, e.g. `new RedisActiveClientsSync({ client })`. */
  sync?: ActiveClientsSync
  /** Retry-After of a refusal. Default one slot (window / slots): the estimate cannot fall sooner. */
  retryAfter?: number | string
  /** Writes the refusal itself; status and headers are already set when it runs. */
  onThrottled?: (...args: [...A, AdmissionInfo]) => R
  observe?: (event: AdmissionEvent) => void
  /** Epoch milliseconds, for tests. Default `Date.now`. */
  now?: () => number
}

const CLIENTS_OPTIONS = ['window', 'slots', 'capacity', 'falsePositiveRate', 'seed', 'now'] as const
const ADMISSION_OPTIONS = [
  'maxActive',
  'resumeBelow',
  ...CLIENTS_OPTIONS,
  'clients',
  'sync',
  'retryAfter',
  'onThrottled',
  'observe',
  'key',
  'skip',
  'statusCode',
  'message',
  'dryRun',
  'ipv6Subnet',
  'validate',
]

/**
 * `continue`: expose `state`, call the next handler. `deny`: expose `state`, set `status` and
 * `headers`, send or call `response`; never call the next handler.
 */
export type AdmissionPlan<R> =
  | typeof SKIP
  | { readonly kind: 'continue'; readonly state: AdmissionState }
  | (DenyPlan<R> & { readonly state: AdmissionState; readonly info: AdmissionInfo })

/** What an adapter wraps: plans each request (continue, deny or skip) and holds the clients seen. */
export interface AdmissionHandler<A extends unknown[], R> {
  readonly clients: ActiveClients
  readonly maxActive: number
  readonly resumeBelow: number
  /** Whether the last decided request found the service in throttling mode. */
  readonly throttling: boolean
  /** A value when every step was synchronous; never a throw (an error comes back rejected). */
  plan(...args: A): Awaitable<AdmissionPlan<R>>
}

/**
 * Validates `admissionControl()` options once and returns the per-request planner: while the
 * estimated active clients exceed `maxActive`, only clients seen within the window pass. Every
 * admitted request records its client; a refused one is not recorded, so retrying never makes a
 * newcomer "active".
 */
export function createAdmissionHandler<A extends unknown[], R>(
  options: AdmissionControlOptions<A, R>,
  adapter: Adapter<A>,
): AdmissionHandler<A, R> {
  assertObject(options, '{ maxActive: 10000 }')
  const raw = options as unknown as Record<string, unknown>
  assertKnownOptions(raw, [...ADMISSION_OPTIONS, ...(adapter.extraOptions ?? [])], 'admissionControl()')
  const { maxActive, sync, observe } = options
  if (typeof maxActive !== 'number' || !Number.isSafeInteger(maxActive) || maxActive < 1) {
    throw new ConfigError('maxActive', maxActive, 'must be a positive whole number of clients')
  }
  const resumeBelow = options.resumeBelow ?? Math.floor(maxActive * DEFAULT_RESUME_FRACTION)
  if (typeof resumeBelow !== 'number' || !Number.isFinite(resumeBelow) || resumeBelow < 0 || resumeBelow > maxActive) {
    throw new ConfigError('resumeBelow', resumeBelow, `must be a number from 0 to maxActive (${maxActive})`)
  }
  if (observe !== undefined && typeof observe !== 'function') {
    throw new ConfigError('observe', observe, 'must be a function of an event')
  }
  if (sync !== undefined && (sync === null || typeof (sync as Partial<ActiveClientsSync>).attach !== 'function')) {
    throw new ConfigError('sync', sync, 'must have an attach(clients) method, such as new RedisActiveClientsSync(...)')
  }
  const clients = clientsOf(options, maxActive)
  const retryAfter =
    options.retryAfter === undefined ? clients.slotLength : toMilliseconds('retryAfter', options.retryAfter)
  const common = parseCommon<A, AdmissionInfo, R>({ ...raw, onLimited: options.onThrottled }, adapter)
  const { key, skip, statusCode, dryRun } = common
  const retryHeaders: readonly HeaderEntry[] = [retryAfterHeader(retryAfter)]
  let throttling = false

  const emit = (event: AdmissionEvent): void => {
    try {
      observe?.(event)
    } catch {
      // An observer never changes a decision.
    }
  }

  const decide = (args: A, requestKey: string): Awaitable<AdmissionPlan<R>> => {
    // Whole clients: the estimator reads a little above the truth for a handful of clients.
    const active = Math.round(clients.size())
    const was = throttling
    if (!throttling && active > maxActive) throttling = true
    else if (throttling && active < resumeBelow) throttling = false
    if (observe && throttling !== was) emit({ type: 'admission-mode', throttling, active, maxActive })
    const known = clients.has(requestKey)
    const admitted = !throttling || known
    if (admitted) clients.add(requestKey)
    if (observe) emit({ type: 'admission', key: requestKey, admitted, known, throttling, active })
    const state: AdmissionState = { throttling, active, known }
    if (admitted || dryRun) return { kind: 'continue', state }
    const info: AdmissionInfo = { ...state, key: requestKey, maxActive, retryAfter }
    return denialResponse(common, args, info, () => throttlingProblem(info, statusCode)).then((denial) => ({
      kind: 'deny',
      state,
      info,
      status: statusCode,
      headers: retryHeaders,
      ...denial,
    }))
  }

  sync?.attach(clients)
  return {
    clients,
    maxActive,
    resumeBelow,
    get throttling() {
      return throttling
    },
    plan(...args) {
      try {
        return andThen(skip ? skip(...args) : false, (skipped) =>
          skipped ? SKIP : andThen(key(...args), (requestKey) => decide(args, requestKey)),
        )
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}

function clientsOf(options: AdmissionControlOptions<never, unknown>, maxActive: number): ActiveClients {
  const { clients } = options
  if (clients === undefined) {
    const { window, slots, falsePositiveRate, seed, now } = options
    const capacity = options.capacity ?? 2 * maxActive
    return new ActiveClients({ capacity, window, slots, falsePositiveRate, seed, ...(now !== undefined && { now }) })
  }
  if (!(clients instanceof ActiveClients)) {
    throw new ConfigError('clients', clients, 'must be an ActiveClients instance')
  }
  for (const field of CLIENTS_OPTIONS) {
    if (options[field] !== undefined) {
      throw new ConfigError(field, options[field], 'belongs to the prebuilt ActiveClients: set it there instead')
    }
  }
  return clients
}

/** RFC 9457 problem details of a refusal in throttling mode. */
export interface ThrottlingProblem {
  readonly type: typeof THROTTLING_MODE
  readonly title: string
  readonly status: number
  readonly detail: string
  /** The estimated active clients, and the mark above which only known clients are served. */
  readonly active: number
  readonly 'max-active': number
}

/** The problem+json body of a client turned away in throttling mode. */
export function throttlingProblem(info: AdmissionInfo, status = 429): ThrottlingProblem {
  const seconds = retryAfterSeconds(info.retryAfter)
  return {
    type: THROTTLING_MODE,
    title: status === 503 ? 'Service Unavailable' : 'Too Many Requests',
    status,
    detail:
      'The service is in throttling mode: it serves only clients active recently. ' +
      `Retry in ${seconds} second${seconds === 1 ? '' : 's'}.`,
    active: info.active,
    'max-active': info.maxActive,
  }
}
