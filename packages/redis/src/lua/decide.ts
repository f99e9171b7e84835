import { BLOCK } from './algorithms/block.js'
import { FIXED_WINDOW } from './algorithms/fixed-window.js'
import { GCRA, WARM_GCRA } from './algorithms/gcra.js'
import { SLIDING_LOG } from './algorithms/sliding-log.js'
import { SLIDING_WINDOW } from './algorithms/sliding-window.js'
import { TOKEN_BUCKET, WARM_TOKEN_BUCKET } from './algorithms/token-bucket.js'
import { makeWarmLua } from './algorithms/warm-up.js'
import {
  CEIL_MS_LUA,
  EXPIRY_SLACK_MS,
  FLOOR_UNITS_LUA,
  isSlidingLogLua,
  ONE_OUTCOME_FORMAT,
  OUTCOME_DOUBLES,
  POLICY_BYTES,
  policyLua,
  replyIndexLua,
} from './protocol.js'

/**
 * The decision script: one or more requests, each deciding every policy of a set for one client
 * key, all-or-nothing, one after the other in argument order (a later request on the same key
 * sees an earlier one's write). Each algorithm is its module's `decide` fragment (algorithms/),
 * which mirrors its TypeScript transition in @sluice/core line for line, so the memory store and
 * Redis give identical outcomes; the parity traces in test/parity hold them to it.
 *
 * KEYS: every request's keys in request order, one per policy; on a Cluster all in one slot.
 * ARGV: two per request: the policy records (protocol.ts, built once per policy set by the
 *       store; their length says how many of KEYS are the request's), then the cost, or 'peek'.
 *       Optional last (an odd count): now in epoch ms (tests); without it the script reads the
 *       server's TIME, once.
 * Reply: one binary string of little-endian doubles, per request in order: all-allowed (1|0),
 *        then per policy its outcome (protocol.ts, read by readOutcomes).
 * State: one string per key, the algorithm's numbers as little-endian doubles (exact, and read
 *        with one C call each, where text needs parsing and formatting); a sliding log is read
 *        and written in parts, never whole (see algorithms/sliding-log.ts).
 * Writes: PSETEX with resetAfter + EXPIRY_SLACK_MS, or SETRANGE in place of the one count that
 *         changes when a fixed-window or sliding-window key holds a state of the same
 *         (sub-)window (its expiry is already right); a sliding log's own writes (logWrite).
 * Cost: Redis runs this whole body on every call and most of its CPU is per-operation overhead,
 *       so it avoids what the profile (INFO commandstats) showed to be dear: tonumber() on
 *       arguments, string formatting and parsing, closures over many locals, tables per policy,
 *       a Lua table as the reply, Lua numbers as command arguments (Redis formats them %.17g).
 *       Several requests in one call share the call's fixed cost (dispatch, TIME, setup).
 */
export const DECIDE_LUA = `${SLIDING_LOG.functions}
${FIXED_WINDOW.functions}
${TOKEN_BUCKET.functions}
${GCRA.functions}
-- Library functions are looked up where used (math.floor, ...), not kept in locals: a function
-- capturing locals pays for each of them on every call.
${CEIL_MS_LUA}${FLOOR_UNITS_LUA}
${SLIDING_WINDOW.decideFunctions}
-- The warming fragments' functions: made by the first warming policy a call decides (makeWarmLua).
local warm
-- The policies of the request being decided (read by decide).
local policies
local requests = math.floor(#ARGV / 2)
local now
if #ARGV > 2 * requests then
  now = tonumber(ARGV[#ARGV])
else
  -- Effects replication (the default since Redis 5) lets a script write after TIME.
  local time = redis.call('TIME')
  now = time[1] * 1000 + math.floor(time[2] / 1000)
end
${BLOCK.decideFunctions}
-- Policy i, its stored state (or false) and cost c (with blockFor, through decideBlocking unless
-- \`bare\`): allowed, remaining, resetAfter, retryAfter, delay; when admitted with c > 0 also the
-- state to write and \`keep\`: when the key already holds a state of the same (sub-)window, whose
-- expiry is then exactly the one this write would set, the byte offset from which the stored
-- state changes; the state to write is then only those bytes, written in place with SETRANGE
-- (else \`keep\` is false and the state is whole). One function with every algorithm inline:
-- Redis runs this whole body on each call, and each closure costs.
decide = function(i, state, c, bare)
  local code, limit, window, burst, precision, maxDelay, blockFor = ${policyLua('i', ['code', 'limit', 'window', 'burst', 'precision', 'maxDelay', 'blockFor'])}
  -- sliding-log: \`state\` is the log's view (logRead), its block inside it.
  if code == ${SLIDING_LOG.code} then ${SLIDING_LOG.decide} end
  if blockFor > 0 and not bare then return decideBlocking(i, state, c, blockFor) end
  if code == ${FIXED_WINDOW.code} then
${FIXED_WINDOW.decide}
  end
  if code == ${SLIDING_WINDOW.code} then
${SLIDING_WINDOW.decide}
  end
  if code == ${TOKEN_BUCKET.code} then
${TOKEN_BUCKET.decide}
  end
  if code > ${GCRA.code} then
${makeWarmLua(WARM_TOKEN_BUCKET.functions + WARM_GCRA.functions, true)}
    if code == ${WARM_TOKEN_BUCKET.code} then
${WARM_TOKEN_BUCKET.decide}
    end
${WARM_GCRA.decide}
  end
${GCRA.decide}
end

-- Decides one request whose n keys follow the first k of KEYS, at cost c (nil: peek), and
-- answers its part of the reply.
local function request(k, n, c)
  if n == 1 and c then
    -- The common case, without a table.
    local key = KEYS[k + 1]
    -- The state: the stored string (or false), or a sliding log's view.
    local stored
    if ${isSlidingLogLua('1')} then
      logFunctions()
      stored = logRead(key)
    else
      stored = redis.call('GET', key)
    end
    local ok, remaining, resetAfter, retryAfter, delay, state, keep, blocks = decide(1, stored, c)
    if not ok then
      if blocks then
        if keep == true then logWrite(key, state) else redis.call('PSETEX', key, string.format('%d', resetAfter + ${EXPIRY_SLACK_MS}), state) end
      end
      return struct.pack('${ONE_OUTCOME_FORMAT}', 0, 0, remaining, resetAfter, retryAfter, delay)
    end
    if c > 0 then
      if keep == true then
        logWrite(key, state)
      elseif keep then
        redis.call('SETRANGE', key, string.format('%d', keep), state)
      else
        -- PSETEX is SET ... PX. The expiry goes as text formatted here (%d), which is cheaper
        -- than Redis's own conversion of a Lua number (%.17g).
        redis.call('PSETEX', key, string.format('%d', resetAfter + ${EXPIRY_SLACK_MS}), state)
      end
    end
    return struct.pack('${ONE_OUTCOME_FORMAT}', 1, 1, remaining, resetAfter, retryAfter, delay)
  end

  local stored
  local logs = false
  for i = 1, n do
    if ${isSlidingLogLua('i')} then logs = true end
  end
  if logs then
    -- A sliding log is read in parts (its view), the other keys with GET.
    logFunctions()
    stored = {}
    for i = 1, n do
      if ${isSlidingLogLua('i')} then
        stored[i] = logRead(KEYS[k + i])
      else
        stored[i] = redis.call('GET', KEYS[k + i])
      end
    end
  else
    stored = redis.call('MGET', unpack(KEYS, k + 1, k + n))
  end
  -- reply[1]: all allowed; then each policy's outcome.
  local reply = { 1 }
  local writes, keeps, blocks = {}, {}, {}
  for i = 1, n do
    local at = ${replyIndexLua('i', 'allowed')}
    local ok, remaining, resetAfter, retryAfter, delay
    if c then
      ok, remaining, resetAfter, retryAfter, delay, writes[i], keeps[i], blocks[i] = decide(i, stored[i], c)
    else
      -- As peekOutcome: the quota left (a cost-0 step), and when a cost-1 request would pass.
      -- An admitted peek carries the cost-0 step's nextAfter in the retryAfter slot, as peekOutcome.
      local _, nextAfter
      ok, _, _, retryAfter = decide(i, stored[i], 1)
      _, remaining, resetAfter, nextAfter = decide(i, stored[i], 0)
      if ok then retryAfter = nextAfter end
      delay = 0
    end
    if ok then reply[at] = 1 else reply[at] = 0; reply[1] = 0 end
    reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = remaining, resetAfter, retryAfter, delay
  end

  if reply[1] == 0 then
    -- A denial writes nothing, except the state of a policy whose denial starts a block.
    for i = 1, n do
      if blocks[i] then
        if keeps[i] == true then
          logWrite(KEYS[k + i], writes[i])
        else
          redis.call('PSETEX', KEYS[k + i], string.format('%d', reply[${replyIndexLua('i', 'resetAfter')}] + ${EXPIRY_SLACK_MS}), writes[i])
        end
      end
    end
    if c then
      -- As core's evaluate: nothing is taken, so the policies that would have admitted report
      -- their quota untouched (a cost-0 step).
      for i = 1, n do
        local at = ${replyIndexLua('i', 'allowed')}
        if reply[at] == 1 then
          local ok, remaining, resetAfter, retryAfter, delay = decide(i, stored[i], 0)
          if ok then reply[at] = 1 else reply[at] = 0 end
          reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = remaining, resetAfter, retryAfter, delay
        end
      end
    end
  elseif c and c > 0 then
    -- All-or-nothing: a denied request writes nothing anywhere.
    for i = 1, n do
      if keeps[i] == true then
        logWrite(KEYS[k + i], writes[i])
      elseif keeps[i] then
        redis.call('SETRANGE', KEYS[k + i], string.format('%d', keeps[i]), writes[i])
      else
        redis.call('PSETEX', KEYS[k + i], string.format('%d', reply[${replyIndexLua('i', 'resetAfter')}] + ${EXPIRY_SLACK_MS}), writes[i])
      end
    end
  end
  return struct.pack('<' .. string.rep('d', ${OUTCOME_DOUBLES} * n + 1), unpack(reply))
end

-- A cost of '1' is compared, not parsed; 'peek' parses to nil.
if requests == 1 then
  policies = ARGV[1]
  local c = 1
  if ARGV[2] ~= '1' then c = tonumber(ARGV[2]) end
  return request(0, #KEYS, c)
end
local replies, k = {}, 0
for r = 1, requests do
  policies = ARGV[2 * r - 1]
  local n = #policies / ${POLICY_BYTES}
  local c = 1
  if ARGV[2 * r] ~= '1' then c = tonumber(ARGV[2 * r]) end
  replies[r] = request(k, n, c)
  k = k + n
end
return table.concat(replies)
`
