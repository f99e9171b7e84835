// koa-ratelimit ships no types: the part of its API the HTTP benchmark uses (memory driver).
declare module 'koa-ratelimit' {
  import type { Context, Middleware } from 'koa'

  /** Options of koa-ratelimit's middleware, memory driver only. */
  interface Options {
    driver: 'memory'
    db: Map<string, unknown>
    duration: number
    max: number
    id: (ctx: Context) => string | false
  }

  /** koa-ratelimit's middleware: one window per instance. */
  export default function ratelimit(options: Options): Middleware
}
