export { RateLimiterObject } from './object.js'
export type { LimiterRequest, LimiterResponse } from './protocol.js'
export type { DurableObjectStoreOptions } from './store.js'
export { DURABLE_OBJECT_LOCATION_HINTS, DURABLE_OBJECT_STORE_OPTION_NAMES, DurableObjectStore } from './store.js'
export type {
  DurableObjectLocationHint,
  DurableObjectNamespaceLike,
  DurableObjectStateLike,
  DurableObjectStorageLike,
  DurableObjectStubLike,
} from './types.js'
