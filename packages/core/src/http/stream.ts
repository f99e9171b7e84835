/**
 * A stream with the same chunks as `body` that calls `done` once when it ends (`true`), fails or
 * is cancelled by its reader (`false`: a client that went away), for limits that last as long
 * as a streamed response.
 */
export function onStreamDone<T>(body: ReadableStream<T>, done: (completed: boolean) => void): ReadableStream<T> {
  const reader = body.getReader()
  let called = false
  const finish = (completed = false): void => {
    if (called) return
    called = true
    done(completed)
  }
  return new ReadableStream<T>({
    async pull(controller) {
      try {
        const chunk = await reader.read()
        if (chunk.done) {
          finish(true)
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

/** The parts of a Node.js `ServerResponse` that tell when it is done (no `node:` import in core). */
export interface NodeResponse {
  once(event: 'finish' | 'close', listener: () => void): unknown
  readonly writableFinished: boolean
  readonly closed: boolean
}

/**
 * Calls `done(true)` once the response has been written ('finish'), or `done(false)` when the
 * connection closed before that (a client that went away), at once if either has happened.
 * 'close' also follows 'finish': `done` must ignore calls after the first.
 */
export function onResponseDone(res: NodeResponse, done: (completed: boolean) => void): void {
  if (res.writableFinished || res.closed) {
    done(res.writableFinished)
    return
  }
  res.once('finish', () => done(true))
  res.once('close', () => done(false))
}
