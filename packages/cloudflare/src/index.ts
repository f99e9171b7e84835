export type { DurableObjectStoreOptions } from './durable-object-store.js'
export {
  DURABLE_OBJECT_LOCATION_HINTS,
  DURABLE_OBJECT_STORE_OPTION_NAMES,
  DurableObjectStore,
} from './durable-object-store.js'
export { RateLimiterObject } from './object.js'
export type { LimiterRequest, LimiterResponse } from './protocol.js'
export type {
  DurableObjectLocationHint,
  DurableObjectNamespaceLike,
  DurableObjectStateLike,
  DurableObjectStorageLike,
  DurableObjectStubLike,
} from './types.js'
