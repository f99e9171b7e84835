import { nowFromArgv } from './now.js'
import { SLIDING_LOG_LUA } from './sliding-log.js'
import { STORED_LUA } from './stored.js'
import { WINDOW_START_LUA } from './window-start.js'

/**
 * The refund script: gives back `cost` units to every policy of a set for one client key, in
 * one call. Each algorithm mirrors its refund in @sluice/core line for line (refundFixedWindow,
 * refundSlidingWindow, refundSlidingLog, refundTokenBucket, refundGcra), on the binary state
 * layout of DECIDE_LUA (see decide.ts), so the memory store and Redis stay identical; the
 * parity traces in test/parity hold them to it.
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policies as for DECIDE_LUA, [2] the cost, [3] how many ms ago the refunded
 *       request was admitted, or '' when unknown, [4] optional: now in epoch ms (tests).
 * Reply: nil.
 * Writes: only a key that holds a state and whose state changes, with SET ... KEEPTTL (a sliding
 *         log: SETRANGE, see sliding-log.ts): a refund
 *         never lengthens the time back to full quota, so the expiry the decision set still
 *         covers it, and a key never loses its expiry. A missing key stays missing.
 */
export const REFUND_LUA = `
local policies = ARGV[1]
local cost = tonumber(ARGV[2])
${nowFromArgv(4)}
-- When the refunded request was admitted (nil: unknown), as in core's Refund.
local admitted = nil
if ARGV[3] ~= '' then admitted = now - tonumber(ARGV[3]) end
${SLIDING_LOG_LUA}
${WINDOW_START_LUA}
${STORED_LUA}

-- Policy i's stored state (never false here) with cost c given back: the new state, or nil
-- when nothing changes.
local function refundAlgorithm(i, state, c)
  local code, limit, window, burst, precision, maxDelay = struct.unpack('<dddddd', policies, 64 * i - 63)

  if code == 1 then
    -- fixed-window; state: start, count
    local start, count = struct.unpack('<dd', state)
    local offset = struct.unpack('<d', policies, 64 * i - 7)
    if count == 0 or start ~= windowStart(now, window, offset) then return nil end
    if admitted and windowStart(admitted, window, offset) ~= start then return nil end
    return struct.pack('<dd', start, math.max(0, count - c))
  end

  if code == 2 then
    -- sliding-window; state: start, then the counts of precision + 1 sub-windows, oldest first.
    -- The state keeps its start, so DECIDE_LUA's in-place SETRANGE (same start) keeps a right expiry.
    local size = window / precision
    local start = now - math.fmod(now, size)
    local stored = struct.unpack('<d', state)
    -- 0-based indices below shift have slid out; a clock that stepped back shifts nothing.
    local shift = math.max(0, (start - stored) / size)
    local counts = {}
    for j = 0, precision do counts[j + 1] = struct.unpack('<d', state, 9 + 8 * j) end
    -- Take from the newest sub-window down to the oldest still inside, or, with the admission
    -- known, from its sub-window alone (1-based here, 0-based in core).
    local newest, oldest = precision + 1, shift + 1
    if admitted then
      -- admitted is read just after the admission: past the newest sub-window it means the newest.
      local index = math.min(precision + 1, precision + 1 - (stored - (admitted - math.fmod(admitted, size))) / size)
      if index < shift + 1 then return nil end
      newest, oldest = index, index
    end
    local left = c
    local j = newest
    while j >= oldest and left > 0 do
      local taken = math.min(left, counts[j])
      counts[j] = counts[j] - taken
      left = left - taken
      j = j - 1
    end
    if left == c then return nil end
    return struct.pack('<' .. string.rep('d', precision + 2), stored, unpack(counts))
  end

  if code == 4 then
    -- token-bucket; state: tokens, updated, burst, limit
    local capacity = burst * window
    local tokens = storedTokens(state, now, limit, window, burst)
    if tokens == capacity then return nil end
    return struct.pack('<dddd', math.min(capacity, tokens + c * window), now, burst, limit)
  end

  -- gcra; state: tat, limit
  local tat = struct.unpack('<d', state)
  if tat <= now then return nil end
  if #state >= 16 and struct.unpack('<d', state, 9) ~= limit then
    tat = now + storedBacklog(state, now, limit, window, burst, maxDelay)
  end
  return struct.pack('<dd', math.max(now, tat - (window / limit) * c), limit)
end

-- As core's refundBlocking(): with blockFor (the seventh double), the algorithm's state follows
-- the 8-byte block, which stays.
local function refund(i, state, c)
  if struct.unpack('<d', policies, 64 * i - 15) == 0 then return refundAlgorithm(i, state, c) end
  if #state <= 8 then return nil end
  local inner = refundAlgorithm(i, string.sub(state, 9), c)
  if inner then return string.sub(state, 1, 8) .. inner end
  return nil
end

for i = 1, #KEYS do
  local code, limit, window = struct.unpack('<ddd', policies, 64 * i - 63)
  if code == 3 then
    -- sliding-log, in place (see sliding-log.ts); its block is inside the log and stays.
    logFunctions()
    local log = logRead(KEYS[i])
    if not log.missing then
      local write = logRefund(log, now, cost, window, admitted)
      if write then logWrite(KEYS[i], write) end
    end
  else
    local stored = redis.call('GET', KEYS[i])
    if stored then
      local state = refund(i, stored, cost)
      if state then redis.call('SET', KEYS[i], state, 'KEEPTTL') end
    end
  end
end
return nil
`
