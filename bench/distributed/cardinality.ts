/**
 * Cardinality rows of `pnpm bench:distributed`: one process after 1 000 / 10 000 / 100 000 keys
 * seen under '1000/1h' (a sliding window, interval 100 ms), then 2 s idle: Redis CPU, the process's
 * CPU and Redis commands per second; then one request per minute per key (a tenth of the keys
 * used once in 6 s, keys seen before: the steady state of an hourly quota) on SyncedStore and on
 * RedisStore: commands per second each.
 */
import type { Redis } from 'ioredis'
import { type CardinalityWorker, countCommands, startCardinalityWorker } from '../../test/synced/cardinality.js'

const CARDINALITIES = [1_000, 10_000, 100_000]
const IDLE_MS = 2000
const TRAFFIC_SECONDS = 6

export async function cardinalityRows(url: string, admin: Redis): Promise<string[]> {
  const cpu = async () => {
    const info = await admin.info('cpu')
    const get = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0)
    return get('used_cpu_sys') + get('used_cpu_user')
  }
  const start = (store: 'redis' | 'synced', prefix: string): Promise<CardinalityWorker> =>
    startCardinalityWorker({ url, store, prefix, limit: 1000, window: 3_600_000, interval: 100 })
  const rows = [
    '| keys seen | idle: Redis CPU | idle: process CPU | idle: commands/s | 1 req/min/key: SyncedStore commands/s | RedisStore commands/s | ratio |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const keys of CARDINALITIES) {
    const synced = await start('synced', `card-${keys}:`)
    await synced.ask({ see: keys })
    const cpu0 = await cpu()
    let processMs = 0
    const idle = await countCommands(admin, async () => {
      processMs = (await synced.ask<{ cpuMs: number }>({ idle: IDLE_MS })).cpuMs
    })
    const redisCpu = (await cpu()) - cpu0
    const traffic = { traffic: { keys, perKeyPerSecond: 1 / 60, seconds: TRAFFIC_SECONDS } }
    const bySynced = await countCommands(admin, () => synced.ask(traffic))
    const redis = await start('redis', `card-${keys}-redis:`)
    await redis.ask({ see: keys })
    const byRedis = await countCommands(admin, () => redis.ask(traffic))
    await Promise.all([synced.close(), redis.close()])
    const perSecond = (n: number, ms: number) => Math.round(n / (ms / 1000)).toLocaleString('en')
    const row = `| ${keys.toLocaleString('en')} | ${((redisCpu / (IDLE_MS / 1000)) * 100).toFixed(1)} % | ${((processMs / IDLE_MS) * 100).toFixed(1)} % | ${perSecond(idle.commands, IDLE_MS)} | ${perSecond(bySynced.commands, TRAFFIC_SECONDS * 1000)} | ${perSecond(byRedis.commands, TRAFFIC_SECONDS * 1000)} | ${(bySynced.commands / byRedis.commands).toFixed(2)} |`
    console.log(row)
    rows.push(row)
  }
  return rows
}
