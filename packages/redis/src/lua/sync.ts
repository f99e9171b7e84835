/**
 * This node's field of one kind (`a`, `r` or `x`) in a sub-window hash, as the scripts name it.
 * Counters a node makes again for a key it forgot (evicted at `maxKeys`) start their running totals
 * from 0, so they write under a new incarnation: `a<n>:<node>` beside the forgotten `a:<node>`, both
 * summed (by the name's first byte), neither shrunk by the other's larger total. Incarnation 0,
 * every key never forgotten, keeps `a:<node>`. The node id comes after the first `:`, so no id
 * can name another incarnation's field.
 */
const FIELD_LUA = `
local function field(kind, node, incarnation)
  if incarnation == '0' then return kind .. ':' .. node end
  return kind .. incarnation .. ':' .. node
end
`

/**
 * The global count of one sub-window hash from its fields (HGETALL): Σa + Σx − Σr − o, summed by
 * each field name's first byte (`a`, `x` add; `r`, `o` take off; `d` is the denied flag), so
 * every incarnation's fields count. Also whether `d` is set, `o`, and the fields named `a`, `r`, `x`
 * (this node's, when given).
 */
const COUNT_LUA = `
local function countOf(fields, a, r, x)
  local sum, denied, offset, heldA, heldR, heldX = 0, 0, 0, 0, 0, 0
  for j = 1, #fields, 2 do
    local name, value = fields[j], fields[j + 1]
    local c = string.byte(name, 1)
    if c == 100 then denied = 1
    else
      value = tonumber(value)
      if c == 97 or c == 120 then sum = sum + value else sum = sum - value end
      if c == 111 then offset = value
      elseif name == a then heldA = value elseif name == r then heldR = value elseif name == x then heldX = value end
    end
  end
  return sum, denied, offset, heldA, heldR, heldX
end
`

/**
 * The sync script: one call per interval (per hash slot on a Cluster) carrying every sub-window
 * this node counted in. Each sub-window of a key is one hash under the key's hash tag, with one
 * field per node (and incarnation, see FIELD_LUA): `a:<node>` its running total admitted locally,
 * `r:<node>` its running total refunded, `x:<node>` what exact decisions admitted for it (grown by
 * the exact script itself), plus `o` (what a reset took off) and `d` (denied in this sub-window).
 * A node writes its `a:` and `r:` totals, never deltas, and a total only ever grows (the larger one
 * is kept), so a flush sent twice, or after a lost reply, counts once. The global count is
 * Σa + Σx − Σr − o. Per key one HGETALL, and one HSET when something grew: what Redis does per
 * sync stays about one command per key (the hash gets its expiry when this write creates it; every
 * node computes the same end for a sub-window).
 *
 * This node's `x:` total comes too, and is written only when larger than Redis's: normally Redis has
 * it first (the exact script grows it), but a Redis restarted empty gets it back this way.
 *
 * KEYS: the sub-window hashes. ARGV[1]: this node's id; then six per key: the incarnation of its
 * fields, admitted total, refunded total, exact total, denied here (1|0), milliseconds to keep the hash.
 * Reply: the server's TIME (seconds, microseconds), then per key the global count, denied (1|0),
 * this node's `x:` field, and 1 when the hash did not exist (0 else): a node that had sent to a
 * live sub-window finding it gone knows Redis lost its keys.
 */
export const SYNC_LUA = `${FIELD_LUA}${COUNT_LUA}
local node = ARGV[1]
local time = redis.call('TIME')
local reply = { tonumber(time[1]), tonumber(time[2]) }
-- This node's field names by incarnation: a call carries few incarnations (mostly 0) over many keys.
local names = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  local at = 6 * i - 3
  local incarnation = ARGV[at - 1]
  local named = names[incarnation]
  if named == nil then
    named = { field('a', node, incarnation), field('r', node, incarnation), field('x', node, incarnation) }
    names[incarnation] = named
  end
  local a, r, x = named[1], named[2], named[3]
  local admitted, refunded, exact = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local fields = redis.call('HGETALL', key)
  local sum, denied, _, held_a, held_r, held_x = countOf(fields, a, r, x)
  local writes = {}
  if admitted > held_a then
    writes[#writes + 1] = a
    writes[#writes + 1] = ARGV[at]
    sum = sum + admitted - held_a
  end
  if refunded > held_r then
    writes[#writes + 1] = r
    writes[#writes + 1] = ARGV[at + 1]
    sum = sum - refunded + held_r
  end
  if exact > held_x then
    writes[#writes + 1] = x
    writes[#writes + 1] = ARGV[at + 2]
    sum = sum + exact - held_x
    held_x = exact
  end
  if ARGV[at + 3] == '1' and denied == 0 then
    writes[#writes + 1] = 'd'
    writes[#writes + 1] = 1
    denied = 1
  end
  if #writes > 0 then
    redis.call('HSET', key, unpack(writes))
    if #fields == 0 then redis.call('PEXPIRE', key, ARGV[at + 4]) end
  end
  reply[#reply + 1] = sum
  reply[#reply + 1] = denied
  reply[#reply + 1] = held_x
  reply[#reply + 1] = #fields == 0 and 1 or 0
end
return reply
`

/** The exact script's first reply value when it ran after its deadline and did nothing. */
const PAST_DEADLINE = -1

/**
 * One exact decision on the same hashes. A call that runs after its deadline (Redis time) does
 * nothing: the node has answered it as denied on its timeout, so counting it would count a request
 * nobody admitted (and a Redis backed up with such calls sheds them cheaply). Else this node's `a:`
 * and `r:` totals catch up first (what it admitted or refunded locally and has not synced yet must
 * count here, or the check would miss it: a refund just before would not free its units); then every policy's estimate from the global counts (for a sliding window
 * the oldest sub-window weighted by the share of it still inside), all-or-nothing; admitted: this
 * node's `x:` field grows by the cost in each policy's current sub-window; denied: `d` is set
 * there, so every node learns it at its next sync.
 *
 * KEYS: per policy its sub-window hashes, oldest first, the current one last.
 * ARGV[1]: this node's id; ARGV[2]: the cost; ARGV[3]: the deadline in epoch ms (0: none); then per
 * policy: limit, how many of KEYS are its (k), the weight of its oldest sub-window (sliding
 * window), milliseconds to keep, the incarnation of its fields (see FIELD_LUA), k running `a:`
 * totals of this node, one per key, k `x:` totals (caught up the same way: a Redis restarted empty
 * gets them back) and k `r:` totals.
 * Reply: 1|0 admitted, then the global count of every key before the decision, in KEYS order; or
 * only PAST_DEADLINE.
 */
export const EXACT_LUA = `${FIELD_LUA}${COUNT_LUA}
local deadline = tonumber(ARGV[3])
if deadline > 0 then
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > deadline then return { ${PAST_DEADLINE} } end
end
local node, cost = ARGV[1], tonumber(ARGV[2])
local reply = { 0 }
local admit = true
local denying = {}
local currents, keeps, exacts = {}, {}, {}
local at, first = 4, 0
while at <= #ARGV do
  local limit, k, weight = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local incarnation = ARGV[at + 4]
  local a, x, r = field('a', node, incarnation), field('x', node, incarnation), field('r', node, incarnation)
  local estimate = 0
  for j = 1, k do
    local key = KEYS[first + j]
    for f, name in ipairs({ a, x, r }) do
      local given = ARGV[at + 4 + (f - 1) * k + j]
      local total = tonumber(given)
      if total > 0 and total > tonumber(redis.call('HGET', key, name) or 0) then
        -- A hash this catch-up makes gets the current sub-window's expiry, the longest any of them needs.
        if redis.call('HSET', key, name, given) == 1 and redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, ARGV[at + 3]) end
      end
    end
    local sum = countOf(redis.call('HGETALL', key))
    reply[#reply + 1] = sum
    if j == 1 and k > 1 then estimate = estimate + sum * weight else estimate = estimate + sum end
  end
  currents[#currents + 1] = KEYS[first + k]
  keeps[#keeps + 1] = ARGV[at + 3]
  exacts[#exacts + 1] = x
  denying[#denying + 1] = estimate + cost > limit + 1e-9
  if denying[#denying] then admit = false end
  first = first + k
  at = at + 5 + 3 * k
end
for i = 1, #currents do
  if admit then
    redis.call('HINCRBY', currents[i], exacts[i], cost)
    redis.call('PEXPIRE', currents[i], keeps[i])
  elseif denying[i] then
    redis.call('HSET', currents[i], 'd', 1)
    redis.call('PEXPIRE', currents[i], keeps[i])
  end
end
if admit then reply[1] = 1 end
return reply
`

/**
 * Takes back an exact admission whose reply came after the node's timeout (the caller was told
 * no): this node's `x:` field shrinks by the cost in each hash that still holds it (an expired hash
 * is not made again). KEYS: each policy's current sub-window hash; ARGV[1]: this node's id;
 * ARGV[2]: the cost; then per key the incarnation of its fields (see FIELD_LUA).
 */
export const TAKE_BACK_LUA = `${FIELD_LUA}
for i = 1, #KEYS do
  local x = field('x', ARGV[1], ARGV[2 + i])
  if redis.call('HEXISTS', KEYS[i], x) == 1 then redis.call('HINCRBY', KEYS[i], x, -tonumber(ARGV[2])) end
end
return #KEYS
`

/**
 * A reset: this node's running totals catch up first (what it counted and has not synced yet is
 * part of what the reset takes off), then each hash's `o` becomes Σa + Σx − Σr, so the global count
 * starts again from 0 while every node's running totals stay as they are (and a late flush of
 * older totals adds nothing). `d` goes.
 *
 * KEYS: the sub-window hashes. ARGV[1]: this node's id; then five per key: the incarnation of its
 * fields (see FIELD_LUA), its admitted, refunded and exact totals, and milliseconds to keep a hash
 * this call makes.
 */
export const RESET_LUA = `${FIELD_LUA}${COUNT_LUA}
local node = ARGV[1]
for i = 1, #KEYS do
  local key = KEYS[i]
  local at = 5 * i - 2
  local incarnation = ARGV[at - 1]
  local mine = { field('a', node, incarnation), field('r', node, incarnation), field('x', node, incarnation) }
  local existed = redis.call('EXISTS', key) == 1
  for f = 1, 3 do
    local total = tonumber(ARGV[at + f - 1])
    if total > tonumber(redis.call('HGET', key, mine[f]) or 0) then redis.call('HSET', key, mine[f], total) end
  end
  local fields = redis.call('HGETALL', key)
  if #fields > 0 then
    if not existed then redis.call('PEXPIRE', key, ARGV[at + 3]) end
    -- The count without the old offset: Σa + Σx − Σr.
    local count, _, offset = countOf(fields)
    redis.call('HSET', key, 'o', count + offset)
    redis.call('HDEL', key, 'd')
  end
end
return #KEYS
`

/**
 * The codec of these scripts: how a sub-window's totals go over the wire (ARGV, in the orders the
 * scripts above read) and what comes back, so no caller packs or reads a position by hand.
 */

/** One sub-window hash's part of a sync or reset call: this node's totals in it. */
export interface SentWindow {
  readonly redisKey: string
  /** Of the key's counters (see FIELD_LUA). */
  readonly incarnation: number
  readonly admitted: number
  readonly refunded: number
  readonly exact: number
  /** Milliseconds Redis keeps a hash this call makes. */
  readonly keep: number
}

/** SYNC_LUA's keys and arguments. */
export function syncCall(nodeId: string, windows: readonly (SentWindow & { readonly denied: boolean })[]): ScriptCall {
  const keys: string[] = []
  const args: (string | number)[] = [nodeId]
  for (const w of windows) {
    keys.push(w.redisKey)
    args.push(w.incarnation, w.admitted, w.refunded, w.exact, w.denied ? '1' : '0', w.keep)
  }
  return { keys, args }
}

/** SYNC_LUA's reply for one sub-window. */
export interface HeardWindow {
  /** The global count. */
  readonly global: number
  /** A node denied in this sub-window. */
  readonly denied: boolean
  /** This node's `x:` field as Redis holds it. */
  readonly exact: number
  /** The hash did not exist before this call. */
  readonly created: boolean
}

/** SYNC_LUA's reply: the server's time (epoch ms) and each sub-window's part, in the call's order. */
export function readSync(reply: number[]): { serverTime: number; windows: HeardWindow[] } {
  const windows: HeardWindow[] = []
  for (let at = 2; at < reply.length; at += 4) {
    windows.push({
      global: reply[at] as number,
      denied: reply[at + 1] === 1,
      exact: reply[at + 2] as number,
      created: reply[at + 3] === 1,
    })
  }
  return { serverTime: (reply[0] as number) * 1000 + Math.floor((reply[1] as number) / 1000), windows }
}

/** One policy of an exact decision: its sub-window hashes oldest first, the current one last. */
export interface ExactPolicy {
  readonly limit: number
  /** The share of the oldest sub-window still inside (sliding window). */
  readonly weight: number
  /** Milliseconds to keep the current hash. */
  readonly keep: number
  readonly incarnation: number
  readonly windows: readonly { readonly redisKey: string; admitted: number; exact: number; refunded: number }[]
}

/** EXACT_LUA's keys and arguments. */
export function exactCall(
  nodeId: string,
  cost: number,
  deadline: number,
  policies: readonly ExactPolicy[],
): ScriptCall {
  const keys: string[] = []
  const args: (string | number)[] = [nodeId, cost, deadline]
  for (const { limit, weight, keep, incarnation, windows } of policies) {
    for (const w of windows) keys.push(w.redisKey)
    args.push(limit, windows.length, weight, keep, incarnation)
    for (const w of windows) args.push(w.admitted)
    for (const w of windows) args.push(w.exact)
    for (const w of windows) args.push(w.refunded)
  }
  return { keys, args }
}

/** EXACT_LUA's reply: undefined when it ran past its deadline; else the decision and each key's global count before it. */
export function readExact(reply: number[]): { admitted: boolean; globals: number[] } | undefined {
  if (reply[0] === PAST_DEADLINE) return undefined
  return { admitted: reply[0] === 1, globals: reply.slice(1) }
}

/** RESET_LUA's keys and arguments. */
export function resetCall(nodeId: string, windows: readonly SentWindow[]): ScriptCall {
  const keys: string[] = []
  const args: (string | number)[] = [nodeId]
  for (const w of windows) {
    keys.push(w.redisKey)
    args.push(w.incarnation, w.admitted, w.refunded, w.exact, w.keep)
  }
  return { keys, args }
}

/** A script's keys and arguments. */
export interface ScriptCall {
  readonly keys: string[]
  readonly args: (string | number)[]
}
