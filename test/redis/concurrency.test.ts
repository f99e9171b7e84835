import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { type PolicyOptions, parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import { clientKind, type TestClient } from '../support/clients.js'
import { findRedis, uniquePrefix } from '../support/redis.js'

const redis = await findRedis()
const CONSUMER = fileURLToPath(new URL('./consumer.ts', import.meta.url))
const LIMIT = 50
const IN_PROCESS = 200
const IN_CHILD = 100
// One instant for every caller: the test is about atomicity, not about windows rolling over.
const NOW = 1_700_000_000_000 + 12_345

/** Spawns the consumer and resolves once it is connected and waiting for "go". */
async function startChild(args: string[]) {
  const child = spawn(process.execPath, [await bundled(CONSUMER), ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const first = await lines.next()
  if (first.value !== 'ready') throw new Error(`consumer said ${first.value}`)
  return {
    go: async (): Promise<number> => {
      child.stdin.write('go\n')
      const result = await lines.next()
      child.stdin.end()
      return (JSON.parse(result.value) as { admitted: number }).admitted
    },
  }
}

const POLICIES: readonly PolicyOptions[] = [
  { limit: LIMIT, window: 60_000, algorithm: 'fixed-window' },
  { limit: LIMIT, window: 60_000, algorithm: 'sliding-log' },
  { limit: LIMIT, window: 60_000, algorithm: 'token-bucket' },
  { limit: LIMIT, window: 60_000, algorithm: 'gcra' },
  { limit: LIMIT, window: 60_000, algorithm: 'sliding-window' },
]

// The two connections of this process are ioredis and node-redis; the child's is iovalkey: all
// three client libraries race for the same key.
describe.skipIf(redis === undefined)('concurrent consumers across connections, processes and client libraries', () => {
  let connections: TestClient[] = []
  beforeAll(async () => {
    const port = redis?.port ?? 0
    connections = [await clientKind('ioredis').single(port), await clientKind('node-redis').single(port)]
  })
  afterAll(async () => {
    for (const c of connections) c.close()
    await redis?.stop()
  })

  it.each(POLICIES.map((p) => [p.algorithm, p] as const))('%s admits exactly the limit', async (_, policy) => {
    const prefix = uniquePrefix('concurrency')
    const set = parsePolicies([policy])
    const stores = connections.map(
      ({ client }) => new RedisStore({ client, prefix, deniedCache: false, now: () => NOW }),
    )
    const child = await startChild([
      'iovalkey',
      String(redis?.port),
      prefix,
      'hot',
      JSON.stringify([policy]),
      String(IN_CHILD),
      String(NOW),
    ])

    const childAdmitted = child.go()
    const local = await Promise.all(
      Array.from({ length: IN_PROCESS }, (_, i) => stores[i % 2]?.consume('hot', set, 1) ?? []),
    )
    const admitted = local.filter((o) => o[0]?.allowed).length + (await childAdmitted)
    expect(admitted).toBe(LIMIT)
    await stores[0]?.reset('hot', set)
  })
})
