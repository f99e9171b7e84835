import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type RedisServer, startRedisServer } from './redis.js'

const run = promisify(execFile)

/** A private redis-server whose own clock (`TIME`, expiry) can be moved while it runs. */
export interface ShiftedRedis {
  readonly server: RedisServer
  /** Moves the server's wall clock `ms` away from the real one (0: back to the real time). */
  shift(ms: number): Promise<void>
  stop(): Promise<void>
}

/** Whether a C compiler is here to build the clock shim; with CI=true a missing one fails the run. */
export async function canShiftClocks(): Promise<boolean> {
  try {
    await run('cc', ['--version'])
    return true
  } catch {
    if (process.env.CI === 'true') throw new Error('CI=true and no C compiler (cc) to build the clock shim')
    return false
  }
}

/**
 * Starts a redis-server with shifted-clock.c preloaded (built here with `cc`): a real server whose
 * `TIME` steps when `shift` says, as a host's clock steps under NTP or a VM restore; its monotonic
 * clock is left alone.
 */
export async function startShiftedRedis(): Promise<ShiftedRedis> {
  const { dir, shim } = await buildShim()
  const file = join(dir, 'shift')
  await writeFile(file, '0')
  const server = await startRedisServer({ env: { LD_PRELOAD: shim, CLOCK_SHIFT_FILE: file } })
  return {
    server,
    shift: (ms) => writeFile(file, String(Math.round(ms))),
    async stop() {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** shifted-clock.c built with `cc` into a directory of its own. */
async function buildShim(): Promise<{ dir: string; shim: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-shifted-clock-'))
  const shim = join(dir, 'shifted-clock.so')
  await run('cc', ['-shared', '-fPIC', '-O2', '-o', shim, fileURLToPath(new URL('./shifted-clock.c', import.meta.url))])
  return { dir, shim }
}

/**
 * Starts a redis-server whose wall clock stands still at the time it started (shifted-clock.c with
 * `CLOCK_PINNED_MS`): `TIME` never moves and no key expires. For tests that drive Redis on a clock
 * of their own (a store's `now`), which real time passing must not change.
 */
export async function startFrozenRedis(): Promise<{ server: RedisServer; stop(): Promise<void> }> {
  const { dir, shim } = await buildShim()
  const server = await startRedisServer({ env: { LD_PRELOAD: shim, CLOCK_PINNED_MS: String(Date.now()) } })
  return {
    server,
    async stop() {
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
