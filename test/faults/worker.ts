// One app process of the fault suite: a limiter on a shared RedisStore under steady open-loop
// load (a decision every `tickMs` on the shared hot key, and one on a random key), recording
// every decision. The parent sends 'stop'; the worker answers with its records and exits.
// Run as: node --import tsx --conditions=source test/faults/worker.ts '<config json>'
import {
  type AlgorithmName,
  BreakerOpenError,
  createLimiter,
  FallbackShare,
  MemoryStore,
  type ObserveEvent,
} from '@sluice/core'
import { FleetSize, RedisStore } from '@sluice/redis'
import { type ClientKind, clientKind } from '../support/clients.js'

export interface WorkerConfig {
  /** The client library of this process's store (the suite gives its processes different ones). */
  library: ClientKind['name']
  port: number
  /** A Cluster's nodes instead of the single server at `port`. */
  cluster?: { host: string; port: number }[]
  prefix: string
  /** The hot key's limit per `windowMs`, shared by every worker. */
  limit: number
  /** Default 'fixed-window'. */
  algorithm?: AlgorithmName
  windowMs: number
  timeoutMs: number
  cooldownMs: number
  tickMs: number
  /**
   * `onStoreError`: 'allow' when absent; 'memory' a MemoryStore (the whole limit in each process);
   * 'share' a FallbackShare of the processes a FleetSize counts (this process's share).
   */
  fallback?: 'memory' | 'share'
}

/** One decision: when it was asked (epoch ms), how long it took, who decided. */
export interface Sample {
  readonly at: number
  readonly ms: number
  readonly source: 'store' | 'fallback' | 'error'
  readonly allowed: boolean
  readonly hot: boolean
  /** Milliseconds until the store's fixed window ends (by the Redis clock), which identifies the window. */
  readonly resetAfter: number
  /** The open breaker decided without asking the store. */
  readonly skipped: boolean
}

export interface WorkerReport {
  readonly samples: Sample[]
  /** Epoch ms of each breaker-open and breaker-close event. */
  readonly opened: number[]
  readonly closed: number[]
  readonly unhandled: number
  /** The processes this one's FleetSize counted at the end (0 without a shared fallback). */
  readonly processes: number
}

const config = JSON.parse(process.argv[2] as string) as WorkerConfig
let unhandled = 0
process.on('unhandledRejection', () => unhandled++)

// The client settings the @sluice/redis README recommends for the library: fail fast while
// disconnected, reconnect every 50 ms.
const kind = clientKind(config.library)
const { client, close } = config.cluster
  ? await kind.cluster(config.cluster, 'recommended')
  : await kind.single(config.port, 'recommended')

const opened: number[] = []
const closed: number[] = []
const fleet = config.fallback === 'share' ? new FleetSize({ client, prefix: config.prefix }) : undefined
const limiter = createLimiter({
  limits: [{ limit: config.limit, window: config.windowMs, algorithm: config.algorithm ?? 'fixed-window' }],
  store: new RedisStore({ client, prefix: config.prefix, deniedCache: false }),
  onStoreError:
    fleet !== undefined
      ? new FallbackShare({ processes: () => fleet.processes })
      : config.fallback === 'memory'
        ? new MemoryStore()
        : 'allow',
  timeout: config.timeoutMs,
  breaker: { failures: 5, cooldown: config.cooldownMs },
  observe: (event: ObserveEvent) => {
    if (event.type === 'breaker-open') opened.push(Date.now())
    if (event.type === 'breaker-close') closed.push(Date.now())
  },
})
console.warn = () => {} // the limiter's one-line warnings; the parent reads the records instead

const samples: Sample[] = []
const decide = (key: string, hot: boolean) => {
  const at = Date.now()
  const start = performance.now()
  limiter.consume(key).then((d) => {
    samples.push({
      at,
      ms: performance.now() - start,
      source: d.source,
      allowed: d.allowed,
      hot,
      resetAfter: d.resetAfter,
      skipped: d.error instanceof BreakerOpenError,
    })
  })
}

{
  const timer = setInterval(() => {
    decide('hot', true)
    decide(`k${Math.floor(Math.random() * 1000)}`, false)
  }, config.tickMs)
  process.on('message', (message) => {
    if (message !== 'stop') return
    clearInterval(timer)
    // Decisions still in flight finish within the timeout.
    setTimeout(() => {
      const report: WorkerReport = { samples, opened, closed, unhandled, processes: fleet?.processes ?? 0 }
      process.send?.(report, () => {
        void (fleet?.close() ?? Promise.resolve()).finally(() => {
          close()
          process.exit(0)
        })
      })
    }, config.timeoutMs + 50)
  })
  process.send?.('ready')
}
