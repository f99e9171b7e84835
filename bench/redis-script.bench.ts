/**
 * The decision script's own cost in Redis (INFO commandstats usec of EVALSHA, per decision), by
 * batch size, on a private redis-server this script starts (loopback, stopped by PID at the end).
 * With --baseline <git revision>, that revision's script runs too, one decision per call, so a
 * change to the script can be compared with what it replaces in the same run. Variants are
 * interleaved round by round; each cell is the median of the rounds.
 *
 *   pnpm bench:redis-script [--rounds 5] [--decisions 16000] [--baseline 7e73d0a]
 */
import { execFileSync } from 'node:child_process'
import { type PolicyInput, parsePolicies } from '@sluice/core'
import { Redis } from 'ioredis'
import { DECIDE_LUA } from '../packages/redis/src/lua/decide.js'
import { parseCommandStats, startRedisServer } from '../test/support/redis.js'

const args = process.argv.slice(2)
const option = (name: string) => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? undefined : args[index + 1]
}
const ROUNDS = Number(option('rounds') ?? 5)
const DECISIONS = Number(option('decisions') ?? 16_000)
const BASELINE = option('baseline')
const BATCHES = [1, 4, 16, 64]
/** Calls sent before waiting for their replies, as a busy connection would. */
const PIPELINE = 8
const CODES = { 'fixed-window': 1, 'sliding-window': 2, 'sliding-log': 3, 'token-bucket': 4, gcra: 5 }
const CLIENT_KEYS = Array.from({ length: 10_000 }, (_, i) => `198.51.${(i >> 8) & 255}.${i & 255}`)

const SETS: Record<string, PolicyInput[]> = {
  '1 limit (sliding-window)': ['1000000/min'],
  '1 limit (fixed-window)': [{ limit: 1e6, window: 60_000, algorithm: 'fixed-window' }],
  '2 limits (sliding-window)': ['1000000/min', '100000/s'],
}

/** The script as the given revision's decide.ts held it (a template literal). */
function scriptAt(revision: string): string {
  const source = execFileSync('git', ['show', `${revision}:packages/redis/src/lua/decide.ts`], { encoding: 'utf8' })
  const body = /export const DECIDE_LUA = `([\s\S]*)`\s*$/.exec(source)?.[1]
  if (body === undefined) throw new Error(`no DECIDE_LUA in ${revision}`)
  return body.replace(/\\`/g, '`')
}

/**
 * The script's policy argument, as the store builds it: seven doubles per policy since blockFor
 * (issue 13), six for a script from before (`doubles`).
 */
function policyArgument(limits: PolicyInput[], doubles: number): { blob: Buffer; ids: string[] } {
  const { policies } = parsePolicies(limits)
  const blob = Buffer.alloc(8 * doubles * policies.length)
  let at = 0
  for (const p of policies) {
    const values = [CODES[p.algorithm], p.limit, p.window, p.burst, p.precision, p.maxDelay, p.blockFor]
    for (const value of values.slice(0, doubles)) at = blob.writeDoubleLE(value, at)
  }
  return { blob, ids: policies.map((p) => p.id) }
}

/** How many doubles per policy a script reads: 7 since blockFor (policy i at byte 56 i - 55). */
const doublesOf = (source: string) => (source.includes('56 * i - 55') ? 7 : 6)

interface EvalshaBuffer {
  evalshaBuffer(sha: string, numkeys: number, ...args: (string | Buffer)[]): Promise<Buffer>
}

const server = await startRedisServer()
const client = new Redis(server.port)
const admin = new Redis(server.port)

/** Script µs per decision: `DECISIONS` decisions in calls of `batch`, PIPELINE calls at a time. */
async function measure(
  sha: string,
  doubles: number,
  limits: PolicyInput[],
  batch: number,
  prefix: string,
): Promise<number> {
  const { blob, ids } = policyArgument(limits, doubles)
  const calls = Math.round(DECISIONS / batch)
  await admin.config('RESETSTAT')
  let next = 0
  let waiting: Promise<Buffer>[] = []
  for (let call = 0; call < calls; call++) {
    const keys: string[] = []
    const argv: (string | Buffer)[] = []
    for (let d = 0; d < batch; d++) {
      const head = `${prefix}{${CLIENT_KEYS[(next++ * 7919) % CLIENT_KEYS.length]}}:b:`
      for (const id of ids) keys.push(head + id)
      argv.push(blob, '1')
    }
    waiting.push((client as unknown as EvalshaBuffer).evalshaBuffer(sha, keys.length, ...keys, ...argv))
    if (waiting.length === PIPELINE) {
      await Promise.all(waiting)
      waiting = []
    }
  }
  await Promise.all(waiting)
  const { evalsha } = parseCommandStats(await admin.info('commandstats'))
  return (evalsha?.usec ?? Number.NaN) / (calls * batch)
}

const variants: { name: string; sha: string; doubles: number; batch: number }[] = []
try {
  const current = (await client.script('LOAD', DECIDE_LUA)) as string
  if (BASELINE !== undefined) {
    const source = scriptAt(BASELINE)
    const sha = (await client.script('LOAD', source)) as string
    variants.push({ name: `${BASELINE}, 1 per call`, sha, doubles: doublesOf(source), batch: 1 })
  }
  for (const batch of BATCHES) {
    variants.push({ name: `now, ${batch} per call`, sha: current, doubles: doublesOf(DECIDE_LUA), batch })
  }

  const results = new Map<string, number[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [setName, limits] of Object.entries(SETS)) {
      for (const [i, variant] of variants.entries()) {
        const cell = `${setName}|${variant.name}`
        const us = await measure(variant.sha, variant.doubles, limits, variant.batch, `s${i}:`)
        results.set(cell, [...(results.get(cell) ?? []), us])
      }
    }
    process.stderr.write(`round ${round + 1} of ${ROUNDS}\n`)
  }

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  console.log(`Script µs per decision (EVALSHA usec in INFO commandstats), median of ${ROUNDS} rounds,`)
  console.log(`${DECISIONS} decisions per cell over 10 000 client keys, ${PIPELINE} calls in flight.\n`)
  console.log(`| script, decisions per call | ${Object.keys(SETS).join(' | ')} |`)
  console.log(
    `|---|${Object.keys(SETS)
      .map(() => '---:')
      .join('|')}|`,
  )
  for (const variant of variants) {
    const cells = Object.keys(SETS).map((setName) => median(results.get(`${setName}|${variant.name}`) ?? []).toFixed(2))
    console.log(`| ${variant.name} | ${cells.join(' | ')} |`)
  }
} finally {
  client.disconnect()
  admin.disconnect()
  await server.stop()
}
