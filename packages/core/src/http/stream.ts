/**
 * A stream with the same chunks as `body` that calls `done` once when it ends, fails or is
 * cancelled by its reader (a client that went away), for limits that last as long as a
 * streamed response.
 */
export function onStreamDone<T>(body: ReadableStream<T>, done: () => void): ReadableStream<T> {
  const reader = body.getReader()
  let called = false
  const finish = (): void => {
    if (called) return
    called = true
    done()
  }
  return new ReadableStream<T>({
    async pull(controller) {
      try {
        const chunk = await reader.read()
        if (chunk.done) {
          finish()
          controller.close()
        } else {
          controller.enqueue(chunk.value)
        }
      } catch (error) {
        finish()
        controller.error(error)
      }
    },
    cancel(reason) {
      finish()
      return reader.cancel(reason)
    },
  })
}
