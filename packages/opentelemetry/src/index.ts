export type { MetricsOptions } from './metrics.js'
export { metrics } from './metrics.js'
