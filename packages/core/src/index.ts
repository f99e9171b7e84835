export * from './algorithms/index.js'
export type { Decision, DecisionSource, PolicyDecision } from './decision.js'
export { toDecision } from './decision.js'
export { parseDurationString, toMilliseconds } from './duration.js'
export { ConfigError, StoreFullError, StoreTimeoutError } from './errors.js'
export * from './http/index.js'
export type { ConsumeOptions, Limiter, LimiterOptions } from './limiter.js'
export { createLimiter } from './limiter.js'
export type { MemoryStoreOptions } from './memory-store.js'
export { MemoryStore } from './memory-store.js'
export type { AlgorithmName, Policy, PolicyInput, PolicyOptions, PolicySet } from './policy.js'
export {
  ALGORITHMS,
  capacityOf,
  formatDuration,
  MAX_PRECISION,
  MAX_SLIDING_LOG_LIMIT,
  parsePolicies,
  parsePolicy,
} from './policy.js'
export * from './sketch/index.js'
export type { Awaitable, Evaluation, Store } from './store.js'
export { andThen, evaluate, isThenable, whenReady } from './store.js'
