import { traceArbitraryOf } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** The gcra's rules in TypeScript (packages/core/src/algorithms/gcra.ts) and Lua (packages/redis/src/lua/algorithms/gcra.ts). */
await parityOf('gcra', tracesOf('gcra'), traceArbitraryOf(['gcra']), 40)
