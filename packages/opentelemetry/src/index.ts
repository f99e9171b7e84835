export type { MetricsOptions } from './metrics.js'
export { DURATION_BUCKETS, metrics } from './metrics.js'
