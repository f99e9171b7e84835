import { type PolicySet, parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { privateRedisAvailable, type RedisServer, startRedisServer } from '../support/redis.js'

/** The commands a script ran (MONITOR's "lua" lines) with the bytes each read or wrote. */
interface Ran {
  readonly name: string
  readonly read: number
  readonly written: number
}

const T0 = 1_700_000_000_000
/** A log's trailer after its records (see packages/redis/src/lua/algorithms/sliding-log.ts). */
const TRAILER = 64

/** MONITOR escapes a binary argument (\xHH, \n, \", \\): its length in bytes. */
const byteLength = (escaped: string) => escaped.replace(/\\x[0-9a-f]{2}|\\./g, '.').length

function bytesOf(args: string[]): Ran {
  const name = (args[0] as string).toLowerCase()
  if (name === 'getrange') {
    const [start, end] = [Number(args[2]), Number(args[3])]
    return { name, read: start < 0 ? end - start + 1 : end - start + 1, written: 0 }
  }
  if (name === 'setrange' || name === 'psetex') return { name, read: 0, written: byteLength(args[3] as string) }
  return { name, read: 0, written: 0 }
}

// Logs of 5 000 entries filled one decision at a time, each relayed by MONITOR: a few seconds on an
// idle machine, over the default 20 s on a busy one, and a test cut off at its timeout goes on
// writing into the next one's MONITOR record. The bound is on the work, not its speed.
describe.skipIf(!(await privateRedisAvailable()))(
  'the sliding log on Redis: work per decision',
  { timeout: 120_000 },
  () => {
    let server: RedisServer
    let client: Redis
    let admin: Redis
    let watcher: Redis
    let monitor: Redis
    /** Commands scripts ran since the last `take`. */
    let ran: Ran[] = []
    /** Called when MONITOR relays the marker `take` sends. */
    let marked: (() => void) | undefined
    beforeAll(async () => {
      server = await startRedisServer()
      client = new Redis(server.port)
      admin = new Redis(server.port)
      watcher = new Redis(server.port)
      // Every other connection ready first (each sends INFO as it connects): ioredis reads a MONITOR
      // line that comes in the same packet as MONITOR's OK as a reply to no command, and throws.
      await Promise.all([client.ping(), admin.ping(), watcher.ping()])
      monitor = await watcher.monitor()
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source !== 'lua') return
        if (args[0] === 'ECHO') marked?.()
        else ran.push(bytesOf(args))
      })
    })
    afterAll(async () => {
      monitor?.disconnect()
      watcher?.disconnect()
      client?.disconnect()
      admin?.disconnect()
      await server?.stop()
    })

    /** What scripts ran until now; waits for MONITOR to have relayed it (a marker sent behind it). */
    async function take(): Promise<Ran[]> {
      const relayed = new Promise<void>((resolve) => {
        marked = resolve
      })
      await admin.eval("return redis.call('ECHO', 'marker')", 0)
      await relayed
      const taken = ran
      ran = []
      return taken
    }

    /** A store on a clock the test moves, and a log filled with `entries` admissions 1 ms apart. */
    async function filled(name: string, set: PolicySet, entries: number) {
      let now = T0
      const store = new RedisStore({ client, prefix: `${name}:`, deniedCache: false, coalesce: false, now: () => now })
      for (let i = 0; i < entries; i++, now++) expect((await store.consume('k', set, 1))[0]?.allowed).toBe(true)
      await take()
      return {
        store,
        /** `n` decisions 1 ms apart: the commands each ran. */
        async decide(n: number) {
          const each: Ran[][] = []
          for (let i = 0; i < n; i++, now++) {
            await store.consume('k', set, 1)
            each.push(await take())
          }
          return each
        },
      }
    }

    const names = (r: Ran[]) => r.map((c) => c.name)
    const read = (r: Ran[]) => r.reduce((sum, c) => sum + c.read, 0)
    const written = (r: Ran[]) => r.reduce((sum, c) => sum + c.written, 0)

    it('appends to a log of 5 000 entries with the same commands and bytes as to a log of 10', async () => {
      const set = parsePolicies({ limit: 10_000, window: 3_600_000, algorithm: 'sliding-log' })
      const small = await (await filled('append-10', set, 10)).decide(20)
      const large = await (await filled('append-5000', set, 5000)).decide(20)
      // The trailer read, one SETRANGE of the new entry and trailer, the expiry: nothing else.
      for (const each of [...small, ...large]) {
        expect(names(each)).toEqual(['getrange', 'setrange', 'pexpire'])
        expect([read(each), written(each)]).toEqual([TRAILER, 16 + TRAILER])
      }
    })

    it('beside another policy, reads the log in parts and the other key with GET, never the log whole', async () => {
      const set = parsePolicies([{ limit: 10_000, window: 3_600_000, algorithm: 'sliding-log' }, '100000/min'])
      const each = await (await filled('pair-5000', set, 5000)).decide(10)
      for (const commands of each) {
        expect(names(commands)).toEqual(['getrange', 'get', 'setrange', 'pexpire', 'setrange'])
        expect([read(commands), written(commands)]).toEqual([TRAILER, 16 + TRAILER + 8])
      }
    })

    it('at the limit, with an entry leaving per decision, reads at most one chunk whatever the log holds', async () => {
      for (const entries of [10, 5000]) {
        const set = parsePolicies({ limit: entries, window: entries, algorithm: 'sliding-log' })
        const each = await (await filled(`full-${entries}`, set, entries)).decide(20)
        for (const commands of each) {
          // The trailer, then the oldest records (up to 16) to find where the log now starts.
          expect(names(commands)).toEqual(['getrange', 'getrange', 'setrange', 'pexpire'])
          expect(read(commands)).toBeLessThanOrEqual(TRAILER + 16 * 16)
          expect(written(commands)).toBe(16 + TRAILER)
        }
      }
    })

    it('moves the live entries down once half have left: amortised bytes per decision stay flat, the string within twice the log', async () => {
      const entries = 100
      const set = parsePolicies({ limit: entries, window: entries, algorithm: 'sliding-log' })
      const { store, decide } = await filled('amortised', set, entries)
      const [key] = store.keysOf('k', set)
      let longest = 0
      const all: Ran[] = []
      for (let round = 0; round < 10; round++) {
        for (const each of await decide(100)) all.push(...each)
        longest = Math.max(longest, await admin.strlen(key as string))
      }
      // 1 000 decisions: every one admitted (one entry left each time), the log moved down about
      // every 100 decisions (a read and a write of its 100 live entries).
      const moves = all.filter((c) => c.name === 'psetex').length
      expect(moves).toBeGreaterThanOrEqual(8)
      expect(moves).toBeLessThanOrEqual(12)
      expect(read(all) / 1000).toBeLessThan(TRAILER + 16 * 16 + 40)
      expect(written(all) / 1000).toBeLessThan(16 + TRAILER + 40)
      expect(longest).toBeLessThanOrEqual(16 * (2 * entries + 1) + TRAILER)
    })

    it('never stores an entry later than now: after the clock steps back the newest entries are restamped now', async () => {
      let now = T0
      const store = new RedisStore({ client, prefix: 'stepped:', deniedCache: false, now: () => now })
      const set = parsePolicies({ limit: 10, window: 1000, algorithm: 'sliding-log' })
      for (const at of [0, 5, 10, 20]) {
        now = T0 + at
        await store.consume('k', set, 1)
      }
      now = T0 + 7
      const [outcome] = await store.consume('k', set, 2)
      expect(outcome).toMatchObject({ allowed: true, remaining: 4 })
      const state = (await admin.getBuffer(store.keysOf('k', set)[0] as string)) as Buffer
      const count = state.readDoubleLE(state.length - TRAILER)
      const times = Array.from({ length: count }, (_, i) => state.readDoubleLE(16 * i) - T0)
      const cums = Array.from({ length: count }, (_, i) => state.readDoubleLE(16 * i + 8))
      expect({ times, cums }).toEqual({ times: [0, 5, 7, 7], cums: [1, 2, 3, 6] })
      // newest (the trailer's sixth double) is now too.
      expect(state.readDoubleLE(state.length - TRAILER + 40) - T0).toBe(7)
      // The restamped entries leave with the window from their new time, not later.
      now = T0 + 1007
      expect((await store.peek('k', set))[0]?.remaining).toBe(10)
    })

    it('neither reads nor changes a log of the previous layout, whose key expires on its own', async () => {
      const store = new RedisStore({ client, prefix: 'previous:', deniedCache: false })
      const set = parsePolicies({ limit: 3, window: 60_000, algorithm: 'sliding-log' })
      const [key] = store.keysOf('k', set)
      expect(key).toMatch(/^previous:\{k\}:l:/)
      // The previous release's state: one string of (time, cost) pairs under `b:`, full.
      const previous = (key as string).replace(':l:', ':b:')
      const pairs = Buffer.alloc(16)
      pairs.writeDoubleLE(Date.now(), 0)
      pairs.writeDoubleLE(3, 8)
      await admin.psetex(previous, 61_000, pairs)
      const [outcome] = await store.consume('k', set, 1)
      expect(outcome).toMatchObject({ allowed: true, remaining: 2 })
      expect(await admin.getBuffer(previous)).toEqual(pairs)
      expect(await admin.pttl(previous)).toBeGreaterThan(59_000)
    })
  },
)
