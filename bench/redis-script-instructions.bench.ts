/**
 * Redis's instructions per decision of the decision script, counted by valgrind's callgrind in a
 * private redis-server (this script starts it under callgrind and stops it by its PID): a count,
 * not a time, so it holds on a loaded machine where `bench:redis-script`'s µs do not. Each cell:
 * instrumentation zeroed, `--decisions` EVALSHA calls of one decision each (over 10 000 client
 * keys, 8 in flight), the dump's total divided by the decisions. Everything the server does for a
 * call counts (reading and parsing the request, the script, the reply). With `--baseline <git
 * revision>` that revision's script runs too, on the record length it reads, in the same server.
 *
 *   pnpm bench:redis-script-instructions [--decisions 2000] [--baseline f79f44c]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type PolicyInput, parsePolicies } from '@sluice/core'
import { Redis } from 'ioredis'
import { DECIDE_LUA } from '../packages/redis/src/lua/decide.js'
import { POLICY_BYTES, policyRecords } from '../packages/redis/src/lua/protocol.js'
import { freePort } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? undefined : args[index + 1]
}
const DECISIONS = Number(option('decisions') ?? 2000)
const BASELINE = option('baseline')
const PIPELINE = 8
const CLIENT_KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

const SETS: Record<string, PolicyInput[]> = {
  'sliding-window': ['1000000/min'],
  'fixed-window': [{ limit: 1e6, window: 60_000, algorithm: 'fixed-window' }],
  'token-bucket': [{ limit: 1e6, window: 60_000, algorithm: 'token-bucket' }],
  gcra: [{ limit: 1e6, window: 60_000, algorithm: 'gcra' }],
  'gcra, warmup 30 s': [{ limit: 1e6, window: 60_000, algorithm: 'gcra', warmup: '30s' }],
}

/** A revision's decision script and its record length (bytes per policy), from its sources (see bench:redis-script). */
async function scriptAt(revision: string): Promise<{ lua: string; bytes: number }> {
  const modules = fileURLToPath(new URL('../packages/redis/node_modules/', import.meta.url))
  const dir = mkdtempSync(join(modules, '.baseline-'))
  try {
    execFileSync('sh', ['-c', `git archive ${revision} packages/redis/src | tar -x -C '${dir}'`])
    const lua = join(dir, 'packages/redis/src/lua/')
    const decide = (await import(pathToFileURL(`${lua}decide.ts`).href)) as { DECIDE_LUA: string }
    const protocol = (await import(pathToFileURL(`${lua}protocol.ts`).href)) as { POLICY_BYTES: number }
    return { lua: decide.DECIDE_LUA, bytes: protocol.POLICY_BYTES }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const out = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'))
const port = await freePort()
const server: ChildProcess = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${out}/callgrind.out`,
    'redis-server',
    '--port',
    String(port),
    '--save',
    '',
    '--appendonly',
    'no',
    // The fewest timer runs (serverCron) a second: under valgrind they land on the counts unevenly.
    '--hz',
    '1',
  ],
  { stdio: 'ignore' },
)
const control = (...flags: string[]) =>
  execFileSync('callgrind_control', [...flags, String(server.pid)], { stdio: 'pipe' })

try {
  // Retried until valgrind's server answers (slowly at first).
  const client = new Redis({ port, retryStrategy: () => 200, maxRetriesPerRequest: null })
  await client.ping()
  const variants = [{ name: 'now', lua: DECIDE_LUA, bytes: POLICY_BYTES }]
  if (BASELINE !== undefined) variants.unshift({ name: BASELINE, ...(await scriptAt(BASELINE)) })
  const shas = await Promise.all(variants.map((v) => client.script('LOAD', v.lua) as Promise<string>))

  /** Instructions per decision of one variant on one set. */
  const count = async (v: number, limits: PolicyInput[]): Promise<number> => {
    const set = parsePolicies(limits)
    // The record as that revision reads it: a prefix of today's (its fields come first).
    const record = policyRecords(set).subarray(0, (variants[v] as { bytes: number }).bytes * set.policies.length)
    const send = (d: number) =>
      (client as unknown as { evalshaBuffer(...a: unknown[]): Promise<Buffer> }).evalshaBuffer(
        shas[v],
        1,
        `v${v}{${CLIENT_KEYS[(d * 7919) % CLIENT_KEYS.length]}}:${set.policies[0]?.id}`,
        record,
        '1',
      )
    for (let d = 0; d < 200; d++) await send(d) // the keys exist, as in a running app
    control('-i', 'on')
    control('-z')
    for (let d = 0; d < DECISIONS; d += PIPELINE) {
      await Promise.all(Array.from({ length: PIPELINE }, (_, k) => send(d + k)))
    }
    control('-d')
    control('-i', 'off')
    const dumps = readdirSync(out).filter((f) => f.startsWith('callgrind.out.'))
    const last = dumps.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop())).at(-1) as string
    const totals = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(out, last), 'utf8'))
    return Number(totals?.[1]) / DECISIONS
  }

  console.log(`Redis instructions per decision (callgrind), ${DECISIONS} decisions a cell, one per call\n`)
  console.log(`| set | ${variants.map((v) => v.name).join(' | ')} |`)
  console.log(`|---|${variants.map(() => '---:').join('|')}|`)
  for (const [name, limits] of Object.entries(SETS)) {
    const cells: string[] = []
    for (const [v, variant] of variants.entries()) {
      const warm = parsePolicies(limits).policies.some((p) => p.warmup > 0)
      cells.push(warm && variant.name !== 'now' ? '–' : (await count(v, limits)).toFixed(0))
    }
    console.log(`| ${name} | ${cells.join(' | ')} |`)
  }
  client.disconnect()
} finally {
  server.kill()
  rmSync(out, { recursive: true, force: true })
}
