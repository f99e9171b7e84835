import type { Awaitable } from '../stores/contract.js'
import type { CommonConfig } from './common-options.js'
import type { HeaderEntry } from './headers.js'
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

export function problemBody(problem: ProblemDetails | object): ResponseBody {
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

/** The plan when `skip` lets a request through: call the next handler, nothing else. */
export const SKIP = Object.freeze({ kind: 'skip' as const })

/**
 * A refused request: set `status` and `headers`, then send `response` (a body) or call it (the
 * user's onLimited); never call the next handler.
 */
export type DenyPlan<R> = {
  readonly kind: 'deny'
  readonly status: number
  readonly headers: readonly HeaderEntry[]
  readonly response: ResponseBody | (() => R)
  /**
   * What to send when the user's onLimited returned without answering (nothing sent in Express,
   * no body in Koa, nothing returned in Hono): the default denial, so a request never hangs.
   */
  readonly fallback: ResponseBody
}

/** The body of a denial, and the default one for an onLimited that does not answer. */
export type Denial<R> = Pick<DenyPlan<R>, 'response' | 'fallback'>

/** The body of a refusal: the user's onLimited, else their message, else the problem details. */
export async function denialResponse<A extends unknown[], I, R>(
  config: Pick<CommonConfig<A, I, R>, 'onLimited' | 'message'>,
  args: A,
  info: I,
  problem: () => ProblemDetails | object,
): Promise<Denial<R>> {
  const { onLimited, message } = config
  if (onLimited) return { response: () => onLimited(...args, info), fallback: problemBody(problem()) }
  const body = message === undefined ? problemBody(problem()) : await messageBody(message, args, info)
  return { response: body, fallback: body }
}

/** Waits `ms` milliseconds: the shaping delay of an admitted request. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
