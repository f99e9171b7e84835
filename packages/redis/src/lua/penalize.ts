import { nowFromArgv } from './now.js'
import { SLIDING_LOG_LUA } from './sliding-log.js'
import { STORED_LUA } from './stored.js'
import { WINDOW_START_LUA } from './window-start.js'

/**
 * The penalty script: takes `cost` units from every policy of a set for one client key whatever
 * their limits, in one call. Each algorithm mirrors its penalty in @sluice/core line for line
 * (penalizeFixedWindow, penalizeSlidingWindow, penalizeSlidingLog, penalizeTokenBucket,
 * penalizeGcra, penalizeBlocking) on the binary state layout of DECIDE_LUA (see decide.ts); the
 * parity traces in test/parity hold them to it.
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policies as for DECIDE_LUA, [2] the cost, [3] optional: now in epoch ms (tests).
 * Reply: nil.
 * Writes: every key, with PSETEX until the new state has drained (and any block has ended),
 *         plus the same slack as DECIDE_LUA (a sliding log: in place, see sliding-log.ts).
 */
export const PENALIZE_LUA = `
local EXPIRY_SLACK_MS = 1000
local policies = ARGV[1]
local cost = tonumber(ARGV[2])
${nowFromArgv(3)}
${SLIDING_LOG_LUA}
${WINDOW_START_LUA}
${STORED_LUA}

-- Policy i's state (or false) with cost c taken: the new state, and how long until it drains.
local function penalize(i, state, c)
  local code, limit, window, burst, precision, maxDelay = struct.unpack('<dddddd', policies, 64 * i - 63)

  if code == 1 then
    local start = windowStart(now, window, struct.unpack('<d', policies, 64 * i - 7))
    local count = 0
    if state then
      local s, n = struct.unpack('<dd', state)
      if s == start then count = n end
    end
    return struct.pack('<dd', start, count + c), start + window - now
  end

  if code == 2 then
    local size = window / precision
    local start = now - math.fmod(now, size)
    local counts = {}
    for j = 1, precision + 1 do counts[j] = 0 end
    if state then
      local stored = struct.unpack('<d', state)
      local shift = math.max(0, (start - stored) / size)
      for j = shift, precision do counts[j - shift + 1] = struct.unpack('<d', state, 9 + 8 * j) end
    end
    counts[precision + 1] = counts[precision + 1] + c
    return struct.pack('<' .. string.rep('d', precision + 2), start, unpack(counts)), start + size - now + precision * size
  end

  if code == 4 then
    local capacity = burst * window
    local tokens = capacity
    if state then tokens = storedTokens(state, now, limit, window, burst) end
    local nextTokens = tokens - c * window
    return struct.pack('<dddd', nextTokens, now, burst, limit), math.ceil((capacity - nextTokens) / limit)
  end

  -- As core's penalizeGcra: up to a window beyond tolerance + maxDelay, the furthest a TAT is read as one.
  local interval = window / limit
  local backlog = 0
  if state then backlog = math.max(0, storedBacklog(state, now, limit, window, burst, maxDelay)) end
  local nextBacklog = math.min(backlog + interval * c, interval * burst + maxDelay + window)
  return struct.pack('<dd', now + nextBacklog, limit), math.ceil(nextBacklog)
end

for i = 1, #KEYS do
  local code, window = struct.unpack('<d', policies, 64 * i - 63), struct.unpack('<d', policies, 64 * i - 47)
  local stored = false
  if code ~= 3 then stored = redis.call('GET', KEYS[i]) end
  local state, drains
  if code == 3 then
    -- sliding-log, in place (see sliding-log.ts); its block is inside the log and stays.
    logFunctions()
    local log = logRead(KEYS[i])
    logLive(log, now, window)
    logWrite(KEYS[i], logAppend(log, now, cost, math.max(window, log.blockedUntil - now) + EXPIRY_SLACK_MS))
  elseif struct.unpack('<d', policies, 64 * i - 15) == 0 then
    state, drains = penalize(i, stored, cost)
  else
    -- A blocking policy: the block (8 bytes) stays before the algorithm's penalized state.
    local blockedUntil, inner = 0, false
    if stored then
      blockedUntil = struct.unpack('<d', stored)
      if #stored > 8 then inner = string.sub(stored, 9) end
    end
    local next
    next, drains = penalize(i, inner, cost)
    state = struct.pack('<d', blockedUntil) .. next
    drains = math.max(drains, blockedUntil - now)
  end
  if state then redis.call('PSETEX', KEYS[i], string.format('%d', drains + EXPIRY_SLACK_MS), state) end
end
return nil
`
