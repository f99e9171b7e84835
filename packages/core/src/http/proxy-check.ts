import type { Warnings } from '../diagnostics/validations.js'

/**
 * How a framework reads X-Forwarded-For when it resolves the client's address: `'ignored'`
 * (the connection's peer is the client), `'hops'` (a set number or list of trusted proxies),
 * `'any'` (every entry is trusted, so the left-most, which the client writes, wins).
 */
export type ForwardedTrust = 'ignored' | 'hops' | 'any'

/** What an adapter tells the proxy check about its framework. */
export interface ProxySetup<A extends unknown[]> {
  /** The framework's setting, read on the first request (apps set it at start-up). */
  trust(...args: A): ForwardedTrust
  /** Whether this request came through a proxy that the framework could have been told about. */
  forwarded(...args: A): boolean
  /** Where the setting lives, for messages: `"Express's 'trust proxy'"`. */
  readonly setting: string
  /** What to do about it, for messages. */
  readonly advice: string
}

/**
 * The two proxy mistakes that silently break a limit by client IP, which express-rate-limit's
 * users know as its validations: a proxy the app does not trust (every client behind it shares
 * the proxy's address, and so one limit), and an app that trusts every forwarded entry (any
 * client picks a fresh key per request with a forged X-Forwarded-For). Runs beside the default
 * key only, and warns at most once per middleware: a log line, never a failed request.
 */
export function proxyCheck<A extends unknown[]>(setup: ProxySetup<A>, warnings: Warnings): (...args: A) => void {
  let trust: ForwardedTrust | undefined
  let done = false
  return (...args) => {
    if (done) return
    trust ??= setup.trust(...args)
    if (trust === 'hops') done = true
    else if (trust === 'any') {
      done = true
      warnings.permissiveTrustProxy(setup.setting, setup.advice)
    } else if (setup.forwarded(...args)) {
      done = true
      warnings.untrustedProxy(setup.setting, setup.advice)
    }
  }
}
