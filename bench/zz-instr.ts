import { createLimiter } from '@sluice/core'
import { SyncedStore } from '@sluice/redis'
import { Redis } from 'ioredis'
const client = new Redis('redis://127.0.0.1:6379')
const two = process.argv[2] === '2'
const policies = two ? [{ limit: 1e9, window: 60_000 }, { limit: 1e9, window: 1000, name: 'b' }] : [{ limit: 1e9, window: 60_000 }]
// A long interval: the loop barely syncs, so the count is the decisions'.
const store = new SyncedStore({ client, prefix: `instr${process.pid}:`, interval: '1h' })
const limiter = createLimiter({ limits: policies, store })
const keys = Array.from({ length: 10_000 }, (_, i) => `k${i}`)
const N = Number(process.argv[3] ?? 100_000)
for (let i = 0; i < N; i++) await limiter.consume(keys[i % keys.length] as string)
await store.close()
client.disconnect()
