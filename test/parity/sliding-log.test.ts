import { traceArbitraryOf } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** The sliding-log's rules in TypeScript (packages/core/src/algorithms/sliding-log.ts) and Lua (packages/redis/src/lua/algorithms/sliding-log.ts). */
await parityOf('sliding-log', tracesOf('sliding-log'), traceArbitraryOf(['sliding-log']), 40)
