import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { until } from './wait.js'

const run = promisify(execFile)

export interface RedisServer {
  readonly host: string
  readonly port: number
  readonly url: string
  /** Set only for servers this process started (never for the shared one). */
  readonly pid?: number
  /** Stops a server we started, by its PID; a no-op for one we merely found. */
  stop(): Promise<void>
}

/** A port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      )
    })
  })
}

/** True when something answers PING with PONG at host:port within `ms`. */
export function answersPing(host: string, port: number, ms = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(ms, () => done(false))
    socket.on('error', () => done(false))
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')))
    socket.connect(port, host, () => socket.write('PING\r\n'))
  })
}

/**
 * Whether `pid` still runs. A daemonized redis-server that has exited stays a zombie until PID 1
 * reaps it (about 1.5 s on some machines), though its port and files are already released: on
 * Linux a zombie counts as gone.
 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  // Without procfs (not Linux) the signal is all there is to go by.
  if (!existsSync('/proc/self/stat')) return true
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch {
    return false // reaped since the signal
  }
}

async function hasRedisServer(): Promise<boolean> {
  try {
    await run('redis-server', ['--version'])
    return true
  } catch {
    return false
  }
}

export interface StartOptions {
  /** Reuse a port, e.g. to restart a server where clients expect it. Default: a free port. */
  port?: number
  args?: string[]
  /** Added to the server's environment (e.g. a clock shim, see shifted-clock.ts). */
  env?: Record<string, string>
}

/** Starts a private, diskless redis-server (DEBUG allowed) and waits until it answers. */
export async function startRedisServer(options: StartOptions = {}): Promise<RedisServer> {
  const port = options.port ?? (await freePort())
  const dir = await mkdtemp(join(tmpdir(), 'sluice-redis-'))
  const pidfile = join(dir, 'redis.pid')
  await run(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--dir',
      dir,
      '--pidfile',
      pidfile,
      '--enable-debug-command',
      'yes',
      ...(options.args ?? []),
    ],
    options.env === undefined ? {} : { env: { ...process.env, ...options.env } },
  )
  await until(() => answersPing('127.0.0.1', port), { what: `redis-server on port ${port}` })
  let pid = 0
  await until(
    async () => {
      pid = Number(await readFile(pidfile, 'utf8').catch(() => '0'))
      return pid > 0
    },
    { what: `the pidfile of redis-server on port ${port}` },
  )
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    pid,
    async stop() {
      if (isAlive(pid)) process.kill(pid, 'SIGTERM')
      await until(() => !isAlive(pid), { what: `redis-server ${pid} to exit` })
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * The Redis for tests that share one: REDIS_URL, else 127.0.0.1:6379, else a private server when
 * redis-server is on the PATH. With CI=true a missing Redis fails the run; otherwise the caller
 * skips (undefined).
 */
export async function findRedis(): Promise<RedisServer | undefined> {
  const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  const host = url.hostname
  const port = Number(url.port || 6379)
  if (await answersPing(host, port)) {
    return { host, port, url: url.toString(), stop: async () => {} }
  }
  if (await hasRedisServer()) return startRedisServer()
  if (process.env.CI === 'true') {
    throw new Error(`CI=true and no Redis: nothing answers at ${url} and redis-server is not on the PATH`)
  }
  return undefined
}

/** Like `findRedis`, for tests that need servers of their own (restarts, DEBUG SLEEP, commandstats). */
export async function privateRedisAvailable(): Promise<boolean> {
  if (await hasRedisServer()) return true
  if (process.env.CI === 'true') throw new Error('CI=true and redis-server is not on the PATH')
  return false
}

export interface RedisCluster {
  readonly nodes: readonly { host: string; port: number }[]
  readonly servers: readonly RedisServer[]
  stop(): Promise<void>
}

/** A 3-master Cluster (with `replicas` per master, default none) on free ports; `stop` ends every server by PID. */
export async function startCluster(masters = 3, replicas = 0): Promise<RedisCluster> {
  const servers: RedisServer[] = []
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      servers.push(
        await startRedisServer({
          args: [
            ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'],
            // A replica's first sync starts at once, not after the 5 s a master waits for more replicas.
            ...['--repl-diskless-sync-delay', '0'],
          ],
        }),
      )
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...servers.map((s) => `127.0.0.1:${s.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ])
    for (const server of servers) {
      await until(
        async () => {
          const { stdout } = await run('redis-cli', ['-p', String(server.port), 'cluster', 'info'])
          return stdout.includes('cluster_state:ok')
        },
        { what: `cluster node ${server.port} to be ok` },
      )
    }
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()))
    throw error
  }
  return {
    nodes: servers.map((s) => ({ host: s.host, port: s.port })),
    servers,
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()))
    },
  }
}

let counter = 0
/** A key prefix no other test (or process) uses, for the shared Redis. */
export function uniquePrefix(name: string): string {
  return `sluice-test:${name}:${process.pid}:${Date.now().toString(36)}:${counter++}:`
}

/** Each server's `INFO commandstats` as calls per command, e.g. { evalsha: 3, get: 1 }. */
export function parseCommandStats(info: string): Record<string, { calls: number; usec: number }> {
  const stats: Record<string, { calls: number; usec: number }> = {}
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats[match[1] as string] = { calls: Number(match[2]), usec: Number(match[3]) }
  }
  return stats
}

/**
 * Commands a server ran between two `parseCommandStats` snapshots, as calls per command, without
 * the INFO and CONFIG RESETSTAT calls of the test itself.
 */
export function commandsBetween(
  before: Record<string, { calls: number }>,
  after: Record<string, { calls: number }>,
): Record<string, number> {
  const ran: Record<string, number> = {}
  for (const [name, { calls }] of Object.entries(after)) {
    const delta = calls - (before[name]?.calls ?? 0)
    if (delta > 0 && name !== 'info' && name !== 'config|resetstat') ran[name] = delta
  }
  return ran
}
