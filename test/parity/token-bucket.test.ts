import { traceArbitraryOf } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** The token-bucket's rules in TypeScript (packages/core/src/algorithms/token-bucket.ts) and Lua (packages/redis/src/lua/algorithms/token-bucket.ts). */
await parityOf('token-bucket', tracesOf('token-bucket'), traceArbitraryOf(['token-bucket']), 40)
