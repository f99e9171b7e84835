/**
 * Sharing rows of `pnpm bench:distributed` (issue 39):
 * - cool keys shared by processes: 2 000 keys at 3 requests a second in all (each of 1 or 4
 *   processes offers every key its part) for `seconds` (at least 10: a hold lasts a second per
 *   live node), far under '1000/1h'; Redis commands on SyncedStore and RedisStore.
 * - a key one node spent: N stores (one process, one client each, interval 100 ms, real clock),
 *   limit 100 per 1 h fixed window; the first spends it, then the others, which never counted the
 *   key, each offer it 10 requests at 20 a second: one after the other 300 ms later, all together
 *   right after (inside the heartbeat in which the key turned hot), or all together after a random
 *   0–1 s (wherever their heartbeats fall). The fleet's admissions, median and worst of 5 runs.
 */
import { parsePolicies } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { sleep } from '../../test/support/wait.js'
import { countCommands, startCardinalityWorker } from '../../test/synced/cardinality.js'

export async function sharingRows(url: string, admin: Redis, seconds: number): Promise<string[]> {
  const rows = [
    '| processes | 2 000 cool keys, 3/s in all, for | SyncedStore commands | RedisStore commands | ratio |',
    '| --- | --- | --- | --- | --- |',
  ]
  const traffic = Math.max(10, seconds)
  for (const processes of [1, 4]) {
    const run = async (store: 'redis' | 'synced') => {
      const prefix = `sharing-${store}-${processes}:`
      const fleet = await Promise.all(
        Array.from({ length: processes }, () =>
          startCardinalityWorker({ url, store, prefix, limit: 1000, window: 3_600_000, interval: 100 }),
        ),
      )
      const ask = { traffic: { keys: 2000, perKeyPerSecond: 3 / processes, seconds: traffic } }
      const ran = await countCommands(admin, () => Promise.all(fleet.map((w) => w.ask(ask))))
      await Promise.all(fleet.map((w) => w.close()))
      return ran.commands
    }
    const synced = await run('synced')
    const redis = await run('redis')
    const row = `| ${processes} | ${traffic} s | ${synced.toLocaleString('en')} | ${redis.toLocaleString('en')} | ${(synced / redis).toFixed(2)} |`
    console.log(row)
    rows.push(row)
  }
  rows.push('', '| nodes | the others start | fleet admitted (median, worst of 5) |', '| --- | --- | --- |')
  for (const nodes of [4, 8]) {
    for (const start of Object.keys(STARTS) as Start[]) {
      const runs: number[] = []
      for (let i = 0; i < 5; i++) runs.push(await spentOnOne(url, nodes, start))
      runs.sort((a, b) => a - b)
      const row = `| ${nodes} | ${STARTS[start]} | ${runs[2]}, ${runs[4]} |`
      console.log(row)
      rows.push(row)
    }
  }
  return rows
}

/** When the nodes that never counted the key start on it, after the first spent it. */
const STARTS = {
  'one-by-one': 'one after the other, 300 ms after',
  together: 'at once, right after',
  'together-later': 'at once, a random 0–1 s after',
} as const
type Start = keyof typeof STARTS

/** One run of "a key one node spent": what the fleet admitted on it. */
async function spentOnOne(url: string, nodes: number, start: Start): Promise<number> {
  const prefix = `sharing-hot-${Date.now()}:`
  const clients = Array.from({ length: nodes }, () => new Redis(url))
  const stores = clients.map((client, i) => new SyncedStore({ client, prefix, nodeId: `n${i}`, interval: 100 }))
  const set = parsePolicies({ limit: 100, window: 3_600_000, algorithm: 'fixed-window' })
  let admitted = 0
  const decide = async (store: SyncedStore) => {
    if ((await store.consume('hot', set, 1)).every((o) => o.allowed)) admitted++
  }
  // Every node has beaten (knows the fleet) before the key is used.
  for (const store of stores) await store.consume('warm', set, 1)
  await sleep(300)
  const [first, ...others] = stores as [SyncedStore, ...SyncedStore[]]
  for (let k = 0; k < 100; k++) {
    await decide(first)
    await sleep(5)
  }
  if (start === 'together-later') await sleep(Math.random() * 1000)
  if (start !== 'one-by-one') {
    for (let k = 0; k < 10; k++) {
      await Promise.all(others.map(decide))
      await sleep(50)
    }
  } else {
    await sleep(300)
    for (const store of others) {
      for (let k = 0; k < 10; k++) {
        await decide(store)
        await sleep(50)
      }
    }
  }
  await Promise.all(stores.map((s) => s.close()))
  for (const client of clients) client.disconnect()
  return admitted
}
