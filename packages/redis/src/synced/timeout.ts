/** Settles as `promise` does, or rejects once `ms` have passed without an answer. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // The rejection waits for the I/O phase after the timer's: on a busy event loop a reply that
    // arrived in time is read there, and wins.
    const timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${ms} ms`))), ms)
    timer.unref?.()
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/** A quiet watch checks this many times over its span. */
const CHECKS_PER_SPAN = 10

/**
 * Calls `quiet` at each check once the watched work has not answered for `ms` (`lastSign`: when it
 * last did, on the clock `now`), until the returned function stops the watch. Like `withTimeout`,
 * a check waits for the I/O phase after its timer's, so a reply that came meanwhile is read first.
 * A check that runs late (the event loop was busy, and may have read only part of what came, or
 * run a backlog of other callbacks first) gives its verdict a loop turn later, and again while
 * turns stay late, up to `ms` more: a busy process, not a silent Redis.
 */
export function watchQuiet(ms: number, lastSign: () => number, now: () => number, quiet: () => void): () => void {
  const step = ms / CHECKS_PER_SPAN
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let checkedAt = now()
  const check = (): void => {
    if (stopped) return
    const at = now()
    const late = at - checkedAt > 2 * step
    checkedAt = at
    const silent = at - lastSign()
    if (silent >= ms && (!late || silent >= 2 * ms)) quiet()
    if (!stopped) arm(late ? 0 : step)
  }
  const arm = (delay: number): void => {
    timer = setTimeout(() => setImmediate(check), delay)
    timer.unref?.()
  }
  arm(step)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
