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

/** A quiet watch checks this many times over its span: the least part of it a busy loop may cost. */
const CHECKS_PER_SPAN = 10

/**
 * Calls `quiet` at each check once the watched work has been silent for `ms` of time in which it
 * could have been heard, until the returned function stops the watch. `lastSign` tells when it last
 * answered, on the clock `now`. A check that runs late (the event loop was busy: no reply could be
 * read meanwhile; the Redis link may have sent it) counts as one tenth of `ms`, not as its whole
 * delay; and like `withTimeout`, each check waits for the I/O phase after its timer's, so a reply
 * that arrived in the meantime is read first.
 */
export function watchQuiet(ms: number, lastSign: () => number, now: () => number, quiet: () => void): () => void {
  const step = ms / CHECKS_PER_SPAN
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let sign = lastSign()
  let checkedAt = now()
  let silent = 0
  const check = (): void => {
    if (stopped) return
    const at = now()
    const elapsed = at - checkedAt
    const heard = elapsed <= 2 * step ? elapsed : step
    checkedAt = at
    const latest = lastSign()
    if (latest !== sign) {
      sign = latest
      silent = Math.min(at - latest, heard)
    } else silent += heard
    if (silent >= ms) quiet()
    if (!stopped) arm()
  }
  const arm = (): void => {
    timer = setTimeout(() => setImmediate(check), step)
    timer.unref?.()
  }
  arm()
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
