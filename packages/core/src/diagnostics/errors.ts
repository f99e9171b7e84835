/**
 * Thrown for every misconfiguration: a bad policy, option or cost. It is a `TypeError` so that
 * callers who only know the platform's error types still catch it; `field` and `value` say what
 * to fix without parsing the message.
 */
export class ConfigError extends TypeError {
  override readonly name = 'ConfigError'
  constructor(
    readonly field: string,
    readonly value: unknown,
    expectation: string,
  ) {
    super(`${field} ${expectation}, got ${describe(value)}`)
  }
}

/** Thrown by a store that cannot take one more key without forgetting a limited one. */
export class StoreFullError extends Error {
  override readonly name = 'StoreFullError'
}

/** The store did not answer within the limiter's `timeout`. */
export class StoreTimeoutError extends Error {
  override readonly name = 'StoreTimeoutError'
  constructor(readonly timeout: number) {
    super(`the store did not answer within ${timeout} ms`)
  }
}

const MAX_DESCRIBED = 120

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return `an array of ${value.length}`
  if (value !== null && typeof value === 'object') {
    try {
      // A client or store passed where it does not belong would bury the message in its fields.
      const json = JSON.stringify(value)
      return json.length > MAX_DESCRIBED ? `${json.slice(0, MAX_DESCRIBED)}…` : json
    } catch {
      return 'an object'
    }
  }
  return String(value)
}

/** An error as a log line shows it: its name and message. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`
  return String(error)
}
