/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits for a condition, not for a time: reads `read()` every `every` ms until `done` accepts the
 * value (by default: the value is `true`), and resolves with that value; rejects after `timeout`
 * ms, naming `what` and the last value read. A read that throws rejects at once.
 */
export async function until<T>(
  read: () => T | Promise<T>,
  { done = (value: T) => value === true, timeout = 10_000, every = 25, what = 'condition' }: UntilOptions<T> = {},
): Promise<T> {
  const deadline = Date.now() + timeout
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what} not met in ${timeout} ms; last read: ${JSON.stringify(value)}`)
    await sleep(every)
  }
}

export interface UntilOptions<T> {
  /** Whether the value read is the one waited for. Default: it is `true`. */
  readonly done?: (value: T) => boolean
  readonly timeout?: number
  /** Milliseconds between reads. */
  readonly every?: number
  /** What is waited for, for the error. */
  readonly what?: string
}
