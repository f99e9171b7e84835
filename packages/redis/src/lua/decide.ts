import { MAX_PRECISION } from '@sluice/core'
import { SLIDING_LOG_LUA } from './sliding-log.js'
import { STORED_LUA } from './stored.js'
import { WINDOW_START_LUA } from './window-start.js'

/**
 * A struct format of little-endian doubles, long enough for a sliding window's whole state (its
 * start and MAX_PRECISION + 1 counts); the script cuts it to length with string.sub, a literal
 * being cheaper than building one on every call.
 */
const DOUBLES = `<${'d'.repeat(MAX_PRECISION + 2)}`

/**
 * The decision script: one or more requests, each deciding every policy of a set for one client
 * key, all-or-nothing, one after the other in argument order (a later request on the same key
 * sees an earlier one's write). Each algorithm mirrors its TypeScript transition in @sluice/core
 * line for line (same formulas, same order of float operations, same EPSILON/ceil/floor rules),
 * so the memory store and Redis give identical outcomes; the parity traces in test/parity hold
 * them to it.
 *
 * KEYS: every request's keys in request order, one per policy; on a Cluster all in one slot.
 * ARGV: two per request: the policies, eight little-endian doubles each (algorithm code, limit,
 *       window, burst, precision, maxDelay, blockFor, offset; built once per policy set by the store; its length
 *       says how many of KEYS are the request's), then the cost, or 'peek'. Optional last (an
 *       odd count): now in epoch ms (tests); without it the script reads the server's TIME, once.
 * Reply: one binary string of little-endian doubles, per request in order: all-allowed (1|0),
 *        then per policy allowed (1|0), remaining, resetAfter, retryAfter, delay; an admitted
 *        policy with nothing remaining sends core's nextAfter in the retryAfter slot.
 * State: one string per key, the algorithm's numbers as little-endian doubles (exact, and read
 *        with one C call each, where text needs parsing and formatting); a sliding log is read
 *        and written in parts, never whole (see sliding-log.ts).
 * Writes: PSETEX with resetAfter + 1 s, or SETRANGE in place of the one count that changes when
 *         a fixed-window or sliding-window key holds a state of the same (sub-)window (its expiry
 *         is already right); a sliding log's own writes (logWrite).
 * Cost: Redis runs this whole body on every call and most of its CPU is per-operation overhead,
 *       so it avoids what the profile (INFO commandstats) showed to be dear: tonumber() on
 *       arguments, string formatting and parsing, closures over many locals, tables per policy,
 *       a Lua table as the reply, Lua numbers as command arguments (Redis formats them %.17g).
 *       Several requests in one call share the call's fixed cost (dispatch, TIME, setup).
 */
export const DECIDE_LUA = `
-- Kept past resetAfter so a state is never lost to the gap between the decision's clock and
-- the expiry clock; a state older than resetAfter decides exactly as no state at all.
local EXPIRY_SLACK_MS = 1000
${SLIDING_LOG_LUA}
${WINDOW_START_LUA}
${STORED_LUA}
-- 1e-6 below is core's EPSILON. Library functions are looked up where used (math.floor, ...),
-- not kept in locals: a function capturing locals pays for each of them on every call.

local function ceilMs(ms)
  if ms <= 1e-6 then return 0 end
  return math.ceil(ms - 1e-6)
end

local function floorUnits(units)
  if units <= 0 then return 0 end
  return math.floor(units + 1e-6)
end

-- As core's timeUntilBelow (sliding-window): the estimate falls linearly while the oldest
-- sub-window slides out, then the next one: walk those segments until \`need\` has drained.
local function untilBelow(counts, left, size, need)
  local elapsed = 0
  for j = 1, #counts do
    local count = counts[j]
    local span = size
    if j == 1 then span = left end
    local drop = (count * span) / size
    if count > 0 and drop >= need - 1e-9 then return ceilMs(elapsed + (need * size) / count) end
    need = need - drop
    elapsed = elapsed + span
  end
  return ceilMs(elapsed)
end

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

-- As core's blocking(): a policy with blockFor (its seventh double) keeps until when the key is
-- blocked before the algorithm's state. While blocked, every request is denied; a request
-- (c > 0) the algorithm denies starts a block, and then (eighth value) the state must be
-- written although the request is denied. Called by decide, which it calls back for the
-- algorithm's own decision (\`bare\`).
local decide
local function decideBlocking(i, state, c, blockFor)
  local blockedUntil, inner = 0, false
  if state then
    blockedUntil = struct.unpack('<d', state)
    if #state > 8 then inner = string.sub(state, 9) end
  end
  if blockedUntil > now then
    local _, _, quotaReset = decide(i, inner, 0, true)
    return false, 0, math.max(blockedUntil - now, quotaReset), blockedUntil - now, 0
  end
  local ok, remaining, resetAfter, retryAfter, delay, next, keep = decide(i, inner, c, true)
  if ok then
    -- In place, the prefix (blockedUntil, unchanged) stays; otherwise the whole state goes.
    if next then
      if keep then keep = keep + 8 else next = struct.pack('<d', blockedUntil) .. next end
    end
    return ok, remaining, resetAfter, retryAfter, delay, next, keep
  end
  if c == nil or c == 0 then return ok, remaining, resetAfter, retryAfter, delay end
  local blocked = struct.pack('<d', now + blockFor) .. (inner or '')
  return false, 0, math.max(resetAfter, blockFor), math.max(retryAfter, blockFor), 0, blocked, false, true
end

-- Policy i (its eight doubles start at byte 64 i - 63), its stored state (or false) and cost c
-- (with blockFor, through decideBlocking unless \`bare\`):
-- allowed, remaining, resetAfter, retryAfter, delay; when admitted with c > 0 also the state to
-- write and \`keep\`: when the key already holds a state of the same (sub-)window, whose expiry
-- is then exactly the one this write would set, the byte offset from which the stored state
-- changes; the state to write is then only those bytes, written in place with SETRANGE (else
-- \`keep\` is false and the state is whole). One function with every algorithm inline: Redis runs
-- this whole body on each call, and each closure costs.
decide = function(i, state, c, bare)
  local code, limit, window, burst, precision, maxDelay, blockFor = struct.unpack('<ddddddd', policies, 64 * i - 63)
  -- sliding-log: \`state\` is the log's view (logRead), its block inside it (see sliding-log.ts).
  if code == 3 then return decideLog(state, now, c, limit, window, blockFor, EXPIRY_SLACK_MS) end
  if blockFor > 0 and not bare then return decideBlocking(i, state, c, blockFor) end

  if code == 1 then
    -- fixed-window; state: start, count. As core's windowStart: windows start \`offset\` after a
    -- multiple of the window (a calendar period's start; 0 otherwise).
    local start = windowStart(now, window, struct.unpack('<d', policies, 64 * i - 7))
    local count = 0
    local keep = false
    if state then
      local s, n = struct.unpack('<dd', state)
      if s == start then count, keep = n, 8 end
    end
    local windowLeft = start + window - now
    if count + c > limit then return false, math.max(0, limit - count), windowLeft, math.max(windowLeft, 1), 0 end
    local nextCount = count + c
    local resetAfter = windowLeft
    if nextCount == 0 then resetAfter = 0 end
    -- With nothing left, the retryAfter slot of an admission carries core's nextAfter.
    local nextAfter = 0
    if nextCount == limit then nextAfter = windowLeft end
    if keep then return true, limit - nextCount, resetAfter, nextAfter, 0, struct.pack('<d', nextCount), keep end
    return true, limit - nextCount, resetAfter, nextAfter, 0, struct.pack('<dd', start, nextCount), false
  end

  if code == 2 then
    -- sliding-window; state: start, then the counts of precision + 1 sub-windows, oldest first
    local size = window / precision
    local start = now - math.fmod(now, size)
    local counts
    local same, keep = false, false
    local stored = state and struct.unpack('<d', state)
    -- As core's sliding window: a start more than a window after this one comes from a clock that
    -- stepped back (or a glitch forward) and reads as no state, so the step costs at most a window.
    if stored and stored >= start and stored - start <= window then
      -- The same sub-window, or a clock that stepped back: the counts where they are, read in
      -- one call (its last value, the position after them, is dropped).
      counts = { struct.unpack(string.sub('${DOUBLES}', 1, precision + 2), state, 9) }
      counts[precision + 2] = nil
      same = stored == start
    else
      counts = {}
      for j = 1, precision + 1 do counts[j] = 0 end
      if stored and stored < start then
        -- The count at 0-based index j is the double at byte 9 + 8 j.
        local shift = (start - stored) / size
        for j = shift, precision do counts[j - shift + 1] = struct.unpack('<d', state, 9 + 8 * j) end
      end
    end
    -- left: the part of the oldest sub-window still inside; the estimate weights it by that. The
    -- whole counts are summed first, as core's running total has them, so the floats agree.
    local left = start + size - now
    local whole = 0
    for j = 2, #counts do whole = whole + counts[j] end
    local estimate = (counts[1] * left) / size + whole
    local ok, remaining, retryAfter, next = true, 0, 0, nil
    if estimate + c > limit + 1e-9 then
      -- The estimate falls linearly while the oldest sub-window slides out, then the next one:
      -- walk those segments until the excess has drained.
      local elapsed, need = 0, estimate + c - limit
      retryAfter = nil
      for j = 1, #counts do
        local count = counts[j]
        local span = size
        if j == 1 then span = left end
        local drop = (count * span) / size
        if count > 0 and drop >= need - 1e-9 then
          retryAfter = ceilMs(elapsed + (need * size) / count)
          break
        end
        need = need - drop
        elapsed = elapsed + span
      end
      ok, remaining, retryAfter = false, floorUnits(limit - estimate), math.max(retryAfter or ceilMs(elapsed), 1)
    else
      if c > 0 then
        local newest = counts[precision + 1] + c
        counts[precision + 1] = newest
        if same then
          -- Only the newest count changes: it alone is written, at its offset.
          keep = 8 * precision + 8
          next = struct.pack('<d', newest)
        else
          next = struct.pack(string.sub('${DOUBLES}', 1, precision + 3), start, unpack(counts))
        end
      end
      remaining = floorUnits(limit - estimate - c)
      if remaining == 0 then retryAfter = math.max(1, untilBelow(counts, left, size, estimate + c + 1 - limit)) end
    end
    -- resetAfter: when the newest non-empty sub-window (after this request) has slid out.
    local resetAfter = 0
    for j = #counts, 1, -1 do
      if counts[j] > 0 then
        if j == 1 then resetAfter = left else resetAfter = left + (j - 1) * size end
        break
      end
    end
    return ok, remaining, resetAfter, retryAfter, 0, next, keep
  end

  if code == 4 then
    -- token-bucket; state: tokens, updated, burst, limit. A token is \`window\` units; \`limit\` units drip in per ms.
    local capacity = burst * window
    local tokens = capacity
    if state then
      local t, u = storedTokens(state, now, limit, window, burst)
      -- As core's tokensAt: updated more than a window after now reads as a full bucket.
      if u - now <= window then tokens = t end
    end
    local nextTokens = tokens - c * window
    local debtAllowed = maxDelay * limit
    if nextTokens < -debtAllowed then
      local waitForTokens = ceilMs((-nextTokens - debtAllowed) / limit)
      return false, math.max(0, math.floor(tokens / window)), ceilMs((capacity - tokens) / limit), math.max(waitForTokens, 1), 0
    end
    local delay = 0
    if nextTokens < 0 then delay = ceilMs(-nextTokens / limit) end
    local remaining = math.max(0, math.floor(nextTokens / window))
    local nextAfter = 0
    if remaining == 0 then nextAfter = math.max(1, ceilMs((window - nextTokens) / limit)) end
    return true, remaining, ceilMs((capacity - nextTokens) / limit), nextAfter, delay,
      struct.pack('<dddd', nextTokens, now, burst, limit)
  end

  -- gcra; state: tat, limit
  local interval = window / limit
  local tolerance = interval * burst
  local backlog = 0
  if state then backlog = storedBacklog(state, now, limit, window, burst, maxDelay) end
  -- As core's backlogOf: a TAT more than a window (and 1 ms) beyond tolerance + maxDelay reads as none.
  if backlog > tolerance + maxDelay + window + 1 then backlog = 0 else backlog = math.max(0, backlog) end
  local nextBacklog = backlog + interval * c
  if nextBacklog > tolerance + maxDelay + 1e-6 then
    return false, floorUnits((tolerance - backlog) / interval), ceilMs(backlog),
      math.max(ceilMs(nextBacklog - tolerance - maxDelay), 1), 0
  end
  local remaining = floorUnits((tolerance - nextBacklog) / interval)
  local nextAfter = 0
  if remaining == 0 then nextAfter = math.max(1, ceilMs(nextBacklog + interval - tolerance)) end
  return true, remaining, ceilMs(nextBacklog), nextAfter, ceilMs(nextBacklog - tolerance),
    struct.pack('<dd', now + nextBacklog, limit)
end

-- Decides one request whose n keys follow the first k of KEYS, at cost c (nil: peek), and
-- answers its part of the reply.
local function request(k, n, c)
  if n == 1 and c then
    -- The common case, without a table.
    local key = KEYS[k + 1]
    -- The state: the stored string (or false), or a sliding log's view. A policy is a sliding log
    -- when its code, the double 3, is: the only code whose seventh byte is 8.
    local stored
    if string.byte(policies, 7) == 8 then
      logFunctions()
      stored = logRead(key)
    else
      stored = redis.call('GET', key)
    end
    local ok, remaining, resetAfter, retryAfter, delay, state, keep, blocks = decide(1, stored, c)
    if not ok then
      if blocks then
        if keep == true then logWrite(key, state) else redis.call('PSETEX', key, string.format('%d', resetAfter + EXPIRY_SLACK_MS), state) end
      end
      return struct.pack('<dddddd', 0, 0, remaining, resetAfter, retryAfter, delay)
    end
    if c > 0 then
      if keep == true then
        logWrite(key, state)
      elseif keep then
        redis.call('SETRANGE', key, string.format('%d', keep), state)
      else
        -- PSETEX is SET ... PX. The expiry goes as text formatted here (%d), which is cheaper
        -- than Redis's own conversion of a Lua number (%.17g).
        redis.call('PSETEX', key, string.format('%d', resetAfter + EXPIRY_SLACK_MS), state)
      end
    end
    return struct.pack('<dddddd', 1, 1, remaining, resetAfter, retryAfter, delay)
  end

  local stored
  local logs = false
  for i = 1, n do
    if string.byte(policies, 64 * i - 57) == 8 then logs = true end
  end
  if logs then
    -- A sliding log is read in parts (its view), the other keys with GET.
    logFunctions()
    stored = {}
    for i = 1, n do
      if string.byte(policies, 64 * i - 57) == 8 then
        stored[i] = logRead(KEYS[k + i])
      else
        stored[i] = redis.call('GET', KEYS[k + i])
      end
    end
  else
    stored = redis.call('MGET', unpack(KEYS, k + 1, k + n))
  end
  -- reply[1]: all allowed; then five values per policy, from reply[5 i - 3].
  local reply = { 1 }
  local writes, keeps, blocks = {}, {}, {}
  for i = 1, n do
    local at = 5 * i - 3
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
          redis.call('PSETEX', KEYS[k + i], string.format('%d', reply[5 * i - 1] + EXPIRY_SLACK_MS), writes[i])
        end
      end
    end
    if c then
      -- As core's evaluate: nothing is taken, so the policies that would have admitted report
      -- their quota untouched (a cost-0 step).
      for i = 1, n do
        local at = 5 * i - 3
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
        redis.call('PSETEX', KEYS[k + i], string.format('%d', reply[5 * i - 1] + EXPIRY_SLACK_MS), writes[i])
      end
    end
  end
  return struct.pack('<' .. string.rep('d', 5 * n + 1), unpack(reply))
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
  local n = #policies / 64
  local c = 1
  if ARGV[2 * r] ~= '1' then c = tonumber(ARGV[2 * r]) end
  replies[r] = request(k, n, c)
  k = k + n
end
return table.concat(replies)
`
