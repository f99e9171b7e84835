import { type AlgorithmName, MAX_PRECISION, type Policy, type PolicySet } from '@sluice/core'
import { EPSILON, ESTIMATE_EPSILON, type Outcome } from '@sluice/core/store'

/**
 * What TypeScript and the scripts agree on, written once: the algorithm codes, the policy record
 * (Lua reads it through the accessors below, generated from one table), the decision reply and
 * its reader, and every tolerance and slack the Lua interpolates from its TypeScript constant.
 */

/** The scripts' algorithm codes: the first double of a policy record. */
export const ALGORITHM_CODES = {
  'fixed-window': 1,
  'sliding-window': 2,
  'sliding-log': 3,
  'token-bucket': 4,
  gcra: 5,
} as const satisfies Record<AlgorithmName, number>

/**
 * The codes of a token bucket and a GCRA with `warmup`: their own fragments, so that a plain
 * bucket's decision reads no warm-up field and tests for none.
 */
export const WARM_CODES = { 'token-bucket': 6, gcra: 7 } as const

/**
 * Kept past resetAfter so a state is never lost to the gap between the decision's clock and the
 * expiry clock; a state older than resetAfter decides exactly as no state at all.
 */
export const EXPIRY_SLACK_MS = 1000

/** Core's float slacks as Lua literals. */
export const EPSILON_LUA = EPSILON.toExponential()
export const ESTIMATE_EPSILON_LUA = ESTIMATE_EPSILON.toExponential()

/**
 * The policy record: one little-endian double per field, in this order, one record per policy
 * of a set, built once per set (`policyRecords`). The lease script sends the first four only.
 * `firstRequest` is 1 for a fixed window with `start: 'first-request'`, else 0. `warmup` (ms) and
 * `coldFactor` are a warming bucket's (its code one of WARM_CODES), 0 and 3 for the others.
 */
const POLICY_FIELDS = [
  'code',
  'limit',
  'window',
  'burst',
  'precision',
  'maxDelay',
  'blockFor',
  'offset',
  'firstRequest',
  'warmup',
  'coldFactor',
] as const
export type PolicyField = (typeof POLICY_FIELDS)[number]
/** Bytes of one whole record. */
export const POLICY_BYTES = 8 * POLICY_FIELDS.length
/** The lease script's record: the fields a leased policy has (no maxDelay, no block). */
export const LEASE_FIELDS = ['code', 'limit', 'window', 'burst'] as const satisfies readonly PolicyField[]
export const LEASE_POLICY_BYTES = 8 * LEASE_FIELDS.length

/**
 * Lua reading fields of record `i` (a Lua expression, 1-based) of the string `from`, whose records
 * are `bytes` long: `fields` must follow each other in the record, and are read with one
 * struct.unpack (one C call however many). A generated expression, not a Lua function: Redis runs
 * a script's whole body on every call, and each function it makes there costs.
 */
export function policyLua(i: string, fields: readonly PolicyField[], from = 'policies', bytes = POLICY_BYTES): string {
  const first = POLICY_FIELDS.indexOf(fields[0] as PolicyField)
  fields.forEach((field, k) => {
    if (POLICY_FIELDS[first + k] !== field)
      throw new Error(`policy fields ${fields.join(', ')} are not in record order`)
  })
  return `struct.unpack('<${'d'.repeat(fields.length)}', ${from}, ${offsetLua(bytes, i, 8 * first + 1)})`
}

/**
 * Lua testing whether record `i` is a sliding log without unpacking its code: the one byte of the
 * code's double that tells sliding-log's apart from every other code's (the log is read in parts,
 * every other state whole, so a request picks how to read before it decides).
 */
export function isSlidingLogLua(i: string, from = 'policies'): string {
  return `string.byte(${from}, ${offsetLua(POLICY_BYTES, i, LOG_BYTE + 1)}) == ${logCodeBytes[LOG_BYTE]}`
}

const codeBytes = (code: number): Buffer => {
  const bytes = Buffer.alloc(8)
  bytes.writeDoubleLE(code)
  return bytes
}
const logCodeBytes = codeBytes(ALGORITHM_CODES['sliding-log'])
const LOG_BYTE = (() => {
  const byte = [...logCodeBytes.keys()].find((b) =>
    [...Object.values(ALGORITHM_CODES), ...Object.values(WARM_CODES)].every(
      (code) => code === ALGORITHM_CODES['sliding-log'] || codeBytes(code)[b] !== logCodeBytes[b],
    ),
  )
  if (byte === undefined) throw new Error("no byte of sliding-log's code tells it from the other codes")
  return byte
})()

/** Byte `at` (1-based) of record `i`: a number when `i` is one, else `bytes * i - (bytes - at)`. */
function offsetLua(bytes: number, i: string, at: number): string {
  if (/^\d+$/.test(i)) return String(bytes * (Number(i) - 1) + at)
  return at === bytes ? `${bytes} * ${i}` : `${bytes} * ${i} - ${bytes - at}`
}

/** The policy records of a set (the scripts' policy argument). */
export function policyRecords(set: PolicySet): Buffer {
  const records = Buffer.alloc(set.policies.length * POLICY_BYTES)
  let at = 0
  for (const policy of set.policies) at = writePolicy(records, at, policy)
  return records
}

/** Writes `policy`'s record (or its first `fields`) at byte `at`; returns the byte after it. */
export function writePolicy(
  target: Buffer,
  at: number,
  policy: Policy,
  fields: readonly PolicyField[] = POLICY_FIELDS,
): number {
  for (const field of fields) {
    at = target.writeDoubleLE(fieldValue(policy, field), at)
  }
  return at
}

function fieldValue(policy: Policy, field: PolicyField): number {
  if (field === 'code') {
    const { algorithm } = policy
    return policy.warmup > 0 && (algorithm === 'gcra' || algorithm === 'token-bucket')
      ? WARM_CODES[algorithm]
      : ALGORITHM_CODES[algorithm]
  }
  if (field === 'firstRequest') return policy.start === 'first-request' ? 1 : 0
  return policy[field]
}

/**
 * The decision reply: per request its all-allowed flag (1|0), then per policy these doubles;
 * an admitted policy with nothing remaining sends core's nextAfter in the retryAfter slot.
 */
const OUTCOME_FIELDS = ['allowed', 'remaining', 'resetAfter', 'retryAfter', 'delay'] as const
/** Doubles per policy in the reply. */
export const OUTCOME_DOUBLES = OUTCOME_FIELDS.length

/** Lua: the index of policy `i`'s `field` in a request's reply table (whose [1] is the all-allowed flag). */
export function replyIndexLua(i: string, field: (typeof OUTCOME_FIELDS)[number]): string {
  const back = OUTCOME_DOUBLES - 2 - OUTCOME_FIELDS.indexOf(field)
  return back === 0 ? `${OUTCOME_DOUBLES} * ${i}` : `${OUTCOME_DOUBLES} * ${i} - ${back}`
}

/** Lua packing a one-policy request's reply from the five locals of its outcome. */
export const ONE_OUTCOME_FORMAT = `<${'d'.repeat(1 + OUTCOME_DOUBLES)}`

/** Bytes of one request's part of a reply of `n` policies. */
export function replyBytes(n: number): number {
  return 8 + 8 * OUTCOME_DOUBLES * n
}

/** The `n` outcomes of the request whose part of the reply starts at byte `at` (its all-allowed flag). */
export function readOutcomes(reply: Buffer, at: number, n: number): Outcome[] {
  const outcomes: Outcome[] = new Array(n)
  at += 8
  for (let i = 0; i < n; i++, at += 8 * OUTCOME_DOUBLES) {
    const allowed = reply.readDoubleLE(at) === 1
    const remaining = reply.readDoubleLE(at + 8)
    // An admission's retryAfter slot carries nextAfter when nothing remains.
    const slot = reply.readDoubleLE(at + 24)
    outcomes[i] = {
      allowed,
      remaining,
      resetAfter: reply.readDoubleLE(at + 16),
      retryAfter: allowed ? 0 : slot,
      delay: reply.readDoubleLE(at + 32),
      nextAfter: allowed && remaining === 0 ? slot : undefined,
    }
  }
  return outcomes
}

/**
 * A struct format of little-endian doubles, long enough for a sliding window's whole state (its
 * start and MAX_PRECISION + 1 counts); a script cuts it to length with string.sub, a literal
 * being cheaper than building one on every call.
 */
export const DOUBLES = `<${'d'.repeat(MAX_PRECISION + 2)}`

/** Core's ceilMs (algorithms/outcome.ts), with its EPSILON. */
export const CEIL_MS_LUA = `
local function ceilMs(ms)
  if ms <= ${EPSILON_LUA} then return 0 end
  return math.ceil(ms - ${EPSILON_LUA})
end
`

/** Core's floorUnits (algorithms/outcome.ts), with its EPSILON. */
export const FLOOR_UNITS_LUA = `
local function floorUnits(units)
  if units <= 0 then return 0 end
  return math.floor(units + ${EPSILON_LUA})
end
`

/**
 * Lua that sets `now` (epoch ms): the value in ARGV[index] when given (tests inject a clock),
 * else the server's TIME, so every process decides on one clock.
 */
export function nowFromArgv(index: number): string {
  return `local now = ARGV[${index}]
if now then
  now = tonumber(now)
else
  local time = redis.call('TIME')
  now = time[1] * 1000 + math.floor(time[2] / 1000)
end`
}
