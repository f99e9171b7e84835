/**
 * `@sluice/core/internal`: helpers that sluice's own packages (@sluice/redis, @sluice/cloudflare)
 * share with core, so that an option is checked and a duration read the same way everywhere. Not
 * for applications or other stores: what it exports may change in any release. A store's
 * contract is `@sluice/core/store`.
 */
export { toMilliseconds } from './duration.js'
export { assertKnownOptions, type OptionHint } from './known-options.js'
export { containObserve } from './observe.js'
export { capacityOf, policySetOf } from './policy.js'
