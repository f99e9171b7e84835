import { traceArbitraryOf } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** The sliding-window's rules in TypeScript (packages/core/src/algorithms/sliding-window.ts) and Lua (packages/redis/src/lua/algorithms/sliding-window.ts). */
await parityOf('sliding-window', tracesOf('sliding-window'), traceArbitraryOf(['sliding-window']), 40)
