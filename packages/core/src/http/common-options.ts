import { ConfigError } from '../diagnostics/errors.js'

export { assertKnownOptions } from '../diagnostics/known-options.js'

import { type Validate, Warnings } from '../diagnostics/validations.js'
import { type Awaitable, isThenable } from '../stores/contract.js'
import { ClientAddressError, ipKey, ipv6SubnetOption } from './client-ip.js'
import { type ProxySetup, proxyCheck } from './proxy-check.js'
import { keyText, type RequestKey } from './request-key.js'
import type { Message } from './response.js'

/** What an adapter tells the shared code about its framework. */
export interface Adapter<A extends unknown[]> {
  /** The package name, for error messages: `'@sluice/express'`. */
  readonly name: string
  /** Where the default key comes from, for error messages: `'req.ip'`. */
  readonly addressSource: string
  /** The client address as the framework resolves it (under its proxy trust settings). */
  address(...args: A): string | undefined
  /** The response status once the request is done: the default `requestWasSuccessful` reads it. */
  status(...args: A): number
  /** Adapter-specific option names that the shared validation must accept. */
  readonly extraOptions?: readonly string[]
  /** The framework's proxy trust, for the checks beside the default key (see `proxyCheck`). */
  readonly proxy?: ProxySetup<A>
}

/** Options every adapter middleware shares; `A` is the framework's handler arguments. */
export interface CommonOptions<A extends unknown[], I, R> {
  /**
   * The client key: a string, or a number or bigint (keyed by its decimal text). Default: the
   * client IP as the framework resolves it, with IPv6 grouped by `ipv6Subnet`. Never a
   * client-settable header unless your framework is told to trust one. A key function that
   * returns anything else (undefined, null, '', an object, NaN) is reported once per middleware
   * (SLUICE_UNUSABLE_KEY) and that request is keyed by the client IP instead; `undefined` is in
   * the type since `req.user?.id ?? ipKey(req.ip)` may give it.
   */
  key?: (...args: A) => Awaitable<RequestKey | undefined>
  /** Return true to let the request through untouched: not counted, no headers. */
  skip?: (...args: A) => Awaitable<boolean>
  /** Status of a denial. Default 429. */
  statusCode?: number
  /** Body of a denial instead of the RFC 9457 problem details. */
  message?: Message<A, I>
  /** Writes the denial response itself; status and headers are already set when it runs. */
  onLimited?: (...args: [...A, I]) => R
  /** Decide and report (state, headers) but never block or delay. */
  dryRun?: boolean
  /** Prefix length that groups IPv6 clients for the default key (32–64, default 56), or false. */
  ipv6Subnet?: number | false
  /**
   * Warn once (console.warn) when the default key is probably wrong: a proxy the framework does
   * not trust, or one that trusts every X-Forwarded-For entry; when two rate limits share a
   * store and a policy without a `namespace`, so both count every request; and about the
   * limiter the middleware builds (a failing store). Default true; false turns every warning
   * off, and `{ SLUICE_UNTRUSTED_PROXY: false }` one by its code (see `WARNING_CODES`).
   */
  validate?: Validate
}

export interface CommonConfig<A extends unknown[], I, R> {
  /** The request's key as text: the custom key's (numbers written out) or the client IP. */
  readonly key: (...args: A) => Awaitable<string>
  readonly skip: ((...args: A) => Awaitable<boolean>) | undefined
  readonly statusCode: number
  readonly message: Message<A, I> | undefined
  readonly onLimited: ((...args: [...A, I]) => R) | undefined
  readonly dryRun: boolean
  /** The middleware's warnings, switched by `CommonOptions.validate`. */
  readonly warnings: Warnings
}

export const COMMON_OPTIONS = [
  'key',
  'skip',
  'statusCode',
  'message',
  'onLimited',
  'dryRun',
  'ipv6Subnet',
  'validate',
] as const

export function assertObject(options: unknown, example: string): asserts options is Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError('options', options, `must be an object such as ${example}`)
  }
}

function optionalFunction<T>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'function') throw new ConfigError(name, value, 'must be a function')
  return value as T
}

/** An HTTP error status option (400–599). */
export function errorStatusOption(name: string, status: unknown): number {
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    throw new ConfigError(name, status, 'must be an HTTP error status from 400 to 599, such as 429 or 503')
  }
  return status
}

export function parseCommon<A extends unknown[], I, R>(
  options: Record<string, unknown>,
  adapter: Adapter<A>,
): CommonConfig<A, I, R> {
  const statusCode = errorStatusOption('statusCode', options.statusCode ?? 429)
  const dryRun = options.dryRun ?? false
  if (typeof dryRun !== 'boolean') throw new ConfigError('dryRun', dryRun, 'must be true or false')

  const { message } = options
  if (message !== undefined && (message === null || !['string', 'object', 'function'].includes(typeof message))) {
    throw new ConfigError('message', message, 'must be a string, a JSON-serialisable object or a function')
  }
  const onLimited = optionalFunction<(...args: [...A, I]) => R>('onLimited', options.onLimited)
  if (onLimited && message !== undefined) {
    throw new ConfigError('message', message, 'cannot be used with onLimited, which writes the response itself')
  }

  const customKey = optionalFunction<(...args: A) => Awaitable<RequestKey | undefined>>('key', options.key)
  if (customKey && options.ipv6Subnet !== undefined) {
    throw new ConfigError(
      'ipv6Subnet',
      options.ipv6Subnet,
      'applies to the default key only; with your own key, group addresses with ipKey(address, subnet)',
    )
  }
  const warnings = new Warnings(options.validate)
  const subnet = ipv6SubnetOption(options.ipv6Subnet)
  const check = !customKey && adapter.proxy ? proxyCheck(adapter.proxy, warnings) : undefined
  const addressKey = (...args: A): string => {
    check?.(...args)
    const address = adapter.address(...args)
    const key = ipKey(address, subnet)
    if (key === undefined) throw new ClientAddressError(adapter.name, adapter.addressSource, address)
    return key
  }
  const key = customKey ? keyOrAddress(customKey, addressKey, warnings) : addressKey

  return {
    key,
    skip: optionalFunction('skip', options.skip),
    statusCode,
    message: message as Message<A, I> | undefined,
    onLimited,
    dryRun,
    warnings,
  }
}

/**
 * The custom key function's text for each request; where it returned nothing usable, the client
 * IP, with one error per middleware that says what the function returned.
 */
function keyOrAddress<A extends unknown[]>(
  custom: (...args: A) => Awaitable<RequestKey | undefined>,
  addressKey: (...args: A) => string,
  warnings: Warnings,
): (...args: A) => Awaitable<string> {
  const usable = (value: unknown, args: A): string => {
    const text = keyText(value)
    if (text !== undefined) return text
    warnings.unusableKey(custom, value)
    return addressKey(...args)
  }
  return (...args) => {
    const value = custom(...args)
    return isThenable(value) ? Promise.resolve(value).then((resolved) => usable(resolved, args)) : usable(value, args)
  }
}
