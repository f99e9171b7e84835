/**
 * Records the process's unhandled rejections between `watch()` and `unwatch()`, so that a test can
 * assert that a failure path left none behind. `watch` empties the record first.
 */
export function unhandledRejections() {
  const seen: unknown[] = []
  const record = (reason: unknown) => seen.push(reason)
  return {
    seen,
    watch() {
      seen.length = 0
      process.on('unhandledRejection', record)
    },
    unwatch() {
      process.off('unhandledRejection', record)
    },
  }
}
