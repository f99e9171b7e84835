import { createLimiter } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
const nr = createClient({ url: 'redis://127.0.0.1:6379' })
const l1 = createLimiter({ limits: '5/s', store: new RedisStore({ client: nr }) })
console.log('node-redis', await l1.consume('k'))
const io = new Redis('redis://127.0.0.1:6379', { enableOfflineQueue: false })
const l2 = createLimiter({ limits: '5/s', store: new RedisStore({ client: io }) })
console.log('ioredis', await l2.consume('k'))
const io3 = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: true, maxRetriesPerRequest: 1 })
io3.on('error', () => {})
const l3 = createLimiter({ limits: '5/s', store: new RedisStore({ client: io3 }) })
console.log('ioredis down', await l3.consume('k'))
io.disconnect(); io3.disconnect()
