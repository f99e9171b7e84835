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

/** A check this late (as a share of the watch's span) finds an event loop that was busy. */
const LATE_SHARE = 0.1

/**
 * Calls `quiet` at each check once the watched work has not answered for `ms` (`lastSign`: when it
 * last did, on the clock `now`), until the returned function stops the watch. A check is due when
 * the silence would reach `ms`; like `withTimeout`, it waits for the I/O phase after its timer's,
 * so a reply that came meanwhile is read first. A check that runs late (the event loop was busy,
 * and may have read only part of what came, or run a backlog of other callbacks first) gives its
 * verdict a loop turn later, and again while turns stay late, up to `ms` more: a busy process, not
 * a silent Redis.
 */
export function watchQuiet(ms: number, lastSign: () => number, now: () => number, quiet: () => void): () => void {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let dueAt = 0
  const check = (): void => {
    if (stopped) return
    const at = now()
    const late = at - dueAt > LATE_SHARE * ms
    const silent = at - lastSign()
    const verdict = silent >= ms && (!late || silent >= 2 * ms)
    if (verdict) quiet()
    if (!stopped) arm(late && !verdict ? 0 : Math.max(ms - silent, LATE_SHARE * ms))
  }
  const arm = (delay: number): void => {
    dueAt = now() + delay
    timer = setTimeout(() => setImmediate(check), delay)
    timer.unref?.()
  }
  arm(Math.max(ms - (now() - lastSign()), 0))
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
