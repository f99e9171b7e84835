import { traceArbitrary } from './random.js'
import { parityOf, tracesOf } from './suite.js'

/** Sets of several algorithms: all-or-nothing across them, each policy's own rules unchanged by the others. */
await parityOf('sets of several algorithms', tracesOf(undefined), traceArbitrary, 150)
