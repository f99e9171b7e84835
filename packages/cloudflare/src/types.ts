// The few Workers runtime types this package touches, written structurally so that neither
// `@cloudflare/workers-types` nor `cloudflare:workers` is needed: the real objects fit them.

/** A Durable Object stub (`namespace.get(id)`): this package talks to it with `fetch`. */
export interface DurableObjectStubLike {
  fetch(input: string, init?: RequestInit): Promise<Response>
}

/** A Durable Object namespace binding (`env.LIMITER`): names become ids, ids become stubs. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown
  get(id: unknown, options?: { locationHint?: DurableObjectLocationHint }): DurableObjectStubLike
}

/** Where Cloudflare should create an object that does not exist yet (a hint, not a guarantee). */
export type DurableObjectLocationHint = 'wnam' | 'enam' | 'sam' | 'weur' | 'eeur' | 'apac' | 'oc' | 'afr' | 'me'

/** The part of a Durable Object's transactional storage (`ctx.storage`) the limiter object uses. */
export interface DurableObjectStorageLike {
  get<T = unknown>(key: string): Promise<T | undefined>
  put<T>(key: string, value: T): Promise<void>
  delete(keys: string[]): Promise<number>
  list<T = unknown>(options?: { prefix?: string; startAfter?: string; limit?: number }): Promise<Map<string, T>>
  getAlarm(): Promise<number | null>
  setAlarm(scheduledTime: number): Promise<void>
}

/** A Durable Object's state (`ctx`, the constructor's first argument). */
export interface DurableObjectStateLike {
  readonly storage: DurableObjectStorageLike
}
