/**
 * `@sluice/core/internal`: helpers that sluice's own packages (@sluice/redis, @sluice/cloudflare)
 * share with core, so that an option is checked and a duration read the same way everywhere. Not
 * for applications or other stores: what it exports may change in any release. A store's
 * contract is `@sluice/core/store`.
 */

export { assertKnownOptions, type OptionHint } from './diagnostics/known-options.js'
export { containObserve } from './diagnostics/observe.js'
export { toMilliseconds } from './policies/duration.js'
export { capacityOf, policySetOf } from './policies/policy.js'
