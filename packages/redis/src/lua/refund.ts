import { nowFromArgv } from './now.js'

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
 * Writes: only a key that holds a state and whose state changes, with SET ... KEEPTTL: a refund
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

-- Policy i's stored state (never false here) with cost c given back: the new state, or nil
-- when nothing changes.
local function refundAlgorithm(i, state, c)
  local code, limit, window, burst, precision = struct.unpack('<ddddd', policies, 56 * i - 55)

  if code == 1 then
    -- fixed-window; state: start, count
    local start, count = struct.unpack('<dd', state)
    if count == 0 or start ~= now - math.fmod(now, window) then return nil end
    if admitted and admitted - math.fmod(admitted, window) ~= start then return nil end
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

  if code == 3 then
    -- sliding-log; state: time1, cost1, time2, cost2, ... oldest first, 16 bytes a pair
    local s = {}
    for j = 1, #state, 8 do s[#s + 1] = struct.unpack('<d', state, j) end
    local n = #s / 2
    local first = 1
    while first <= n and s[2 * first - 1] <= now - window do first = first + 1 end
    if first > n then return nil end
    if admitted then
      -- Only the admission's entry gives back: the newest at or before admitted, which is read
      -- just after the admission.
      local k = n
      while k >= first and s[2 * k - 1] > admitted do k = k - 1 end
      if k < first then return nil end
      local kept = s[2 * k] - math.min(c, s[2 * k])
      local middle = ''
      if kept > 0 then middle = struct.pack('<dd', s[2 * k - 1], kept) end
      return string.sub(state, 16 * first - 15, 16 * k - 16) .. middle .. string.sub(state, 16 * k + 1)
    end
    local left = c
    local reduced = nil
    while left > 0 and n >= first do
      local taken = math.min(left, s[2 * n])
      left = left - taken
      if taken == s[2 * n] then
        n = n - 1
      else
        reduced = s[2 * n] - taken
      end
    end
    -- The pairs kept are a byte range of the old state (as in DECIDE_LUA), the newest one with
    -- its cost reduced when only part of it was given back.
    if reduced then
      return string.sub(state, 16 * first - 15, 16 * n - 16) .. struct.pack('<dd', s[2 * n - 1], reduced)
    end
    return string.sub(state, 16 * first - 15, 16 * n)
  end

  if code == 4 then
    -- token-bucket; state: tokens, updated
    local capacity = burst * window
    local t, u = struct.unpack('<dd', state)
    local tokens = math.min(capacity, t + math.max(0, now - u) * limit)
    if tokens == capacity then return nil end
    return struct.pack('<dd', math.min(capacity, tokens + c * window), now)
  end

  -- gcra; state: tat
  local tat = struct.unpack('<d', state)
  if tat <= now then return nil end
  return struct.pack('<d', math.max(now, tat - (window / limit) * c))
end

-- As core's refundBlocking(): with blockFor (the seventh double), the algorithm's state follows
-- the 8-byte block, which stays.
local function refund(i, state, c)
  if struct.unpack('<d', policies, 56 * i - 7) == 0 then return refundAlgorithm(i, state, c) end
  if #state <= 8 then return nil end
  local inner = refundAlgorithm(i, string.sub(state, 9), c)
  if inner then return string.sub(state, 1, 8) .. inner end
  return nil
end

local stored = redis.call('MGET', unpack(KEYS))
for i = 1, #KEYS do
  if stored[i] then
    local state = refund(i, stored[i], cost)
    if state then redis.call('SET', KEYS[i], state, 'KEEPTTL') end
  end
end
return nil
`
