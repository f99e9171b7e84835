import { traceArbitraryOf } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** The fixed-window's rules in TypeScript (packages/core/src/algorithms/fixed-window.ts) and Lua (packages/redis/src/lua/algorithms/fixed-window.ts). */
await parityOf('fixed-window', tracesOf('fixed-window'), traceArbitraryOf(['fixed-window']), 40)
