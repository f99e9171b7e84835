// The fault suite's long form: four app processes, 3 s faults, a 5 s breaker cooldown (the default before it became 1 s),
// then a Cluster failover, then SyncedStore under a key flood, then FallbackShare through Redis faults, then SyncedStore's
// leased buckets through Redis faults. Prints the tables of test/faults/README.md.
//   pnpm test:faults [--short]
import { fallbackTable } from './fallback-table.js'
import { LONG, runFailover, runFaultSuite, SHORT, table } from './run.js'
import { bucketRows, HEADER, held } from './synced-buckets.js'
import { floodTable, runSyncedFlood } from './synced-flood.js'

const options = process.argv.includes('--short') ? SHORT : LONG
let ok = true
for (const suite of [runFaultSuite, runFailover]) {
  const result = await suite(options)
  console.log(`${table(result)}\n`)
  ok &&= result.unhandled === 0 && result.exitCodes.every((code) => code === 0)
}
const flood = await runSyncedFlood()
console.log(`SyncedStore under a key flood (maxKeys 1000):\n${floodTable(flood)}\n`)
ok &&= flood.every((row) => row.mostInWindow <= 105 && row.failed === 0)
const fallback = await fallbackTable('fixed-window')
console.log(`RedisStore + FallbackShare through faults 1 s and 9 s into a window:\n${fallback.text}\n`)
ok &&= fallback.ok
console.log(`SyncedStore leased buckets through Redis faults (rows printed as they come):\n${HEADER}`)
ok &&= (await bucketRows()).every(held)
process.exit(ok ? 0 : 1)
