import type { Awaitable } from '../store.js'
import { PROBLEM_CONTENT_TYPE, type ProblemDetails } from './problem.js'

/** A response body ready to write: adapters send `text` with this `contentType`, nothing else. */
export interface ResponseBody {
  readonly contentType: string
  readonly text: string
}

/**
 * What a denied request gets instead of the default problem details: a string (sent as
 * text/plain), a JSON-serialisable value (sent as application/json), or a function of the
 * request and the denial returning either.
 */
export type Message<A extends unknown[], I> = string | object | ((...args: [...A, I]) => Awaitable<string | object>)

export function problemBody(problem: ProblemDetails): ResponseBody {
  return { contentType: PROBLEM_CONTENT_TYPE, text: JSON.stringify(problem) }
}

export async function messageBody<A extends unknown[], I>(
  message: Message<A, I>,
  args: A,
  info: I,
): Promise<ResponseBody> {
  const value = typeof message === 'function' ? await message(...args, info) : message
  if (typeof value === 'string') return { contentType: 'text/plain; charset=utf-8', text: value }
  return { contentType: 'application/json', text: JSON.stringify(value) }
}

/** Waits `ms` milliseconds: the shaping delay of an admitted request. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
