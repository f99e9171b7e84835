export { hashTag, MAX_TAG_LENGTH } from './keys.js'
export { DECIDE_LUA } from './lua/decide.js'
export type { RedisStoreOptions } from './store.js'
export { RedisStore } from './store.js'
