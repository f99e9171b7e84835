/**
 * `@sluice/core/testing`: what a third-party store needs to prove it behaves as the built-in ones.
 * Nothing here depends on a test runner.
 */

export { seededRandom } from './testing/seeded-random.js'
export type { ConformanceCase, ConformanceSkip, StoreConformanceOptions } from './testing/store-conformance.js'
export { storeConformanceCases } from './testing/store-conformance.js'
