/**
 * The decision script: every policy of a set for one client key, in one call, all-or-nothing.
 * Each algorithm mirrors its TypeScript transition in @sluice/core line for line (same
 * formulas, same order of float operations, same EPSILON/ceil/floor rules), so the memory store
 * and Redis give identical outcomes; the parity traces in test/parity hold them to it.
 *
 * KEYS: one per policy, all under one hash tag.
 * ARGV: mode ('consume' | 'peek'), now (epoch ms; '' = the server's TIME), cost, then six values
 *       per policy: algorithm, limit, window, burst, precision, maxDelay.
 * Reply: all-allowed (1|0), then per policy allowed (1|0), remaining, resetAfter, retryAfter,
 *        delay. Every value is a whole number: Lua numbers become Redis integers by truncation.
 * State: one string per key, numbers joined by spaces: whole numbers with %d, the fractional
 *        GCRA TAT with %.17g so it survives the round trip exactly (tostring keeps 14 digits).
 * Cost: Redis runs this per call, so it avoids per-call tables where it can: algorithms return
 *       multiple values and take the policy as arguments.
 */
export const DECIDE_LUA = `
local EPSILON = 1e-6
-- Kept past resetAfter so a state is never lost to the gap between the decision's clock and
-- the expiry clock; a state older than resetAfter decides exactly as no state at all.
local EXPIRY_SLACK_MS = 1000
local floor, ceil, max, min, fmod, format = math.floor, math.ceil, math.max, math.min, math.fmod, string.format

local function ceilMs(ms)
  if ms <= EPSILON then return 0 end
  return ceil(ms - EPSILON)
end

local function floorUnits(units)
  if units <= 0 then return 0 end
  return floor(units + EPSILON)
end

-- Every algorithm: (state text or false, now, cost, limit, window, burst, precision, maxDelay)
-- -> allowed, remaining, resetAfter, retryAfter, delay, state text to write (admitted only).

local function denied(remaining, resetAfter, retryAfter)
  return false, remaining, resetAfter, max(retryAfter, 1), 0, nil
end

local function numbers(text)
  local list = {}
  for token in string.gmatch(text, '%S+') do list[#list + 1] = tonumber(token) end
  return list
end

-- state: "start count"
local function fixedWindow(text, now, cost, limit, window)
  local start = now - fmod(now, window)
  local count = 0
  if text then
    local s, c = string.match(text, '^(%S+) (%S+)$')
    if tonumber(s) == start then count = tonumber(c) end
  end
  local windowLeft = start + window - now
  if count + cost > limit then return denied(limit - count, windowLeft, windowLeft) end
  local nextCount = count + cost
  local resetAfter = windowLeft
  if nextCount == 0 then resetAfter = 0 end
  return true, limit - nextCount, resetAfter, 0, 0, format('%d %d', start, nextCount)
end

-- counts[1] is the oldest sub-window; state: "start count1 count2 ..."
local function estimateOf(counts, left, size)
  local sum = (counts[1] * left) / size
  for i = 2, #counts do sum = sum + counts[i] end
  return sum
end

local function timeUntilBelow(counts, left, size, excess)
  local elapsed, need = 0, excess
  for i = 1, #counts do
    local count = counts[i]
    local span = size
    if i == 1 then span = left end
    local drop = (count * span) / size
    if count > 0 and drop >= need - 1e-9 then return ceilMs(elapsed + (need * size) / count) end
    need = need - drop
    elapsed = elapsed + span
  end
  return ceilMs(elapsed)
end

local function resetAfterOf(counts, left, size)
  for i = #counts, 1, -1 do
    if counts[i] > 0 then
      if i == 1 then return left end
      return left + (i - 1) * size
    end
  end
  return 0
end

local function slidingWindow(text, now, cost, limit, window, burst, precision)
  local size = window / precision
  local start = now - fmod(now, size)
  local counts = {}
  for i = 1, precision + 1 do counts[i] = 0 end
  if text then
    local s = numbers(text)
    -- A clock that stepped back (shift < 0) keeps the counts where they are.
    local shift = max(0, (start - s[1]) / size)
    for i = shift, precision do counts[i - shift + 1] = s[i + 2] end
  end
  local left = start + size - now
  local estimate = estimateOf(counts, left, size)
  if estimate + cost > limit + 1e-9 then
    local wait = timeUntilBelow(counts, left, size, estimate + cost - limit)
    return denied(floorUnits(limit - estimate), resetAfterOf(counts, left, size), wait)
  end
  if cost == 0 then return true, floorUnits(limit - estimate), resetAfterOf(counts, left, size), 0, 0, nil end
  counts[precision + 1] = counts[precision + 1] + cost
  -- %d, not table.concat's tostring, which keeps only 14 digits.
  local state = { format('%d', start) }
  for i = 1, #counts do state[i + 1] = format('%d', counts[i]) end
  return true, floorUnits(limit - estimate - cost), resetAfterOf(counts, left, size), 0, 0, table.concat(state, ' ')
end

-- state: "time1 cost1 time2 cost2 ...", oldest first
local function slidingLog(text, now, cost, limit, window)
  local s = {}
  if text then s = numbers(text) end
  local n = #s / 2
  local first = 1
  while first <= n and s[2 * first - 1] <= now - window do first = first + 1 end
  local used = 0
  for i = first, n do used = used + s[2 * i] end
  local newest = nil
  if n >= first then newest = s[2 * n - 1] end

  if used + cost > limit then
    local excess = used + cost - limit
    local i = first
    while excess > 0 do
      excess = excess - s[2 * i]
      i = i + 1
    end
    local leaves = s[2 * (i - 1) - 1] + window - now
    return denied(limit - used, newest + window - now, leaves)
  end
  if cost == 0 then
    local resetAfter = 0
    if newest then resetAfter = newest + window - now end
    return true, limit - used, resetAfter, 0, 0, nil
  end
  local state = {}
  for i = 2 * first - 1, 2 * n do state[#state + 1] = format('%d', s[i]) end
  if newest == now then
    state[#state] = format('%d', s[2 * n] + cost)
  else
    state[#state + 1] = format('%d', now)
    state[#state + 1] = format('%d', cost)
  end
  return true, limit - used - cost, window, 0, 0, table.concat(state, ' ')
end

-- state: "tokens updated"; a token is \`window\` units and \`limit\` units drip in per ms
local function tokenBucket(text, now, cost, limit, window, burst, precision, maxDelay)
  local capacity = burst * window
  local tokens = capacity
  if text then
    local t, u = string.match(text, '^(%S+) (%S+)$')
    tokens = min(capacity, tonumber(t) + max(0, now - tonumber(u)) * limit)
  end
  local nextTokens = tokens - cost * window
  local debtAllowed = maxDelay * limit
  if nextTokens < -debtAllowed then
    local waitForTokens = ceilMs((-nextTokens - debtAllowed) / limit)
    return denied(max(0, floor(tokens / window)), ceilMs((capacity - tokens) / limit), waitForTokens)
  end
  local delay = 0
  if nextTokens < 0 then delay = ceilMs(-nextTokens / limit) end
  return true, max(0, floor(nextTokens / window)), ceilMs((capacity - nextTokens) / limit), 0, delay,
    format('%d %d', nextTokens, now)
end

-- state: "tat"
local function gcra(text, now, cost, limit, window, burst, precision, maxDelay)
  local interval = window / limit
  local tolerance = interval * burst
  local backlog = 0
  if text then backlog = max(0, tonumber(text) - now) end
  local nextBacklog = backlog + interval * cost
  if nextBacklog > tolerance + maxDelay + EPSILON then
    return denied(
      floorUnits((tolerance - backlog) / interval),
      ceilMs(backlog),
      ceilMs(nextBacklog - tolerance - maxDelay)
    )
  end
  return true, floorUnits((tolerance - nextBacklog) / interval), ceilMs(nextBacklog), 0,
    ceilMs(nextBacklog - tolerance), format('%.17g', now + nextBacklog)
end

local ALGORITHMS = {
  ['fixed-window'] = fixedWindow,
  ['sliding-window'] = slidingWindow,
  ['sliding-log'] = slidingLog,
  ['token-bucket'] = tokenBucket,
  ['gcra'] = gcra,
}

local peek = ARGV[1] == 'peek'
local now = tonumber(ARGV[2])
if not now then
  -- Effects replication (the default since Redis 5) lets a script write after TIME.
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
end
local cost = tonumber(ARGV[3])
local stored = redis.call('MGET', unpack(KEYS))
local reply = { 1 }
local writes = {}

local function put(i, ok, remaining, resetAfter, retryAfter, delay)
  local base = 2 + (i - 1) * 5
  if ok then reply[base] = 1 else reply[base] = 0; reply[1] = 0 end
  reply[base + 1] = remaining
  reply[base + 2] = resetAfter
  reply[base + 3] = retryAfter
  reply[base + 4] = delay
end

-- The policy at index i with \`c\` as the cost: all of its results.
local function run(i, c)
  local at = 3 + (i - 1) * 6
  return ALGORITHMS[ARGV[at + 1]](stored[i], now, c, tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]),
    tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5]), tonumber(ARGV[at + 6]))
end

for i = 1, #KEYS do
  if peek then
    -- As peekOutcome: the quota left (a cost-0 step), and when a cost-1 request would pass.
    local ok, _, _, retryAfter = run(i, 1)
    local _, remaining, resetAfter = run(i, 0)
    put(i, ok, remaining, resetAfter, retryAfter, 0)
  else
    local ok, remaining, resetAfter, retryAfter, delay, state = run(i, cost)
    put(i, ok, remaining, resetAfter, retryAfter, delay)
    writes[i] = state
    writes[#KEYS + i] = resetAfter
  end
end

if reply[1] == 0 and not peek then
  -- As core's evaluate: nothing is taken, so the policies that would have admitted report their
  -- quota untouched (a cost-0 step).
  for i = 1, #KEYS do
    if reply[2 + (i - 1) * 5] == 1 then put(i, run(i, 0)) end
  end
end

-- All-or-nothing: a denied request writes nothing anywhere.
if reply[1] == 1 and not peek and cost > 0 then
  for i = 1, #KEYS do redis.call('SET', KEYS[i], writes[i], 'PX', writes[#KEYS + i] + EXPIRY_SLACK_MS) end
end
return reply
`
