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
 * State: one string per key, numbers joined by spaces, written with %.17g so a fractional GCRA
 *        TAT survives the round trip exactly (tostring keeps only 14 digits).
 */
export const DECIDE_LUA = `
local EPSILON = 1e-6
-- Kept past resetAfter so a state is never lost to the gap between the decision's clock and
-- the expiry clock; a state older than resetAfter decides exactly as no state at all.
local EXPIRY_SLACK_MS = 1000

local function ceilMs(ms)
  if ms <= EPSILON then return 0 end
  return math.ceil(ms - EPSILON)
end

local function floorUnits(units)
  if units <= 0 then return 0 end
  return math.floor(units + EPSILON)
end

local function admitted(remaining, resetAfter, delay, state)
  return { true, remaining, resetAfter, 0, delay, state }
end

local function denied(remaining, resetAfter, retryAfter)
  return { false, remaining, resetAfter, math.max(retryAfter, 1), 0 }
end

local function fixedWindow(s, now, p, cost)
  local limit, window = p.limit, p.window
  local start = now - math.fmod(now, window)
  local count = 0
  if s and s[1] == start then count = s[2] end
  local windowLeft = start + window - now
  if count + cost > limit then return denied(limit - count, windowLeft, windowLeft) end
  local nextCount = count + cost
  local resetAfter = windowLeft
  if nextCount == 0 then resetAfter = 0 end
  return admitted(limit - nextCount, resetAfter, 0, { start, nextCount })
end

-- counts[1] is the oldest sub-window; state = { start, counts... }
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

local function slidingWindow(s, now, p, cost)
  local limit, precision = p.limit, p.precision
  local size = p.window / precision
  local start = now - math.fmod(now, size)
  local counts = {}
  for i = 1, precision + 1 do counts[i] = 0 end
  if s then
    -- A clock that stepped back (shift < 0) keeps the counts where they are.
    local shift = math.max(0, (start - s[1]) / size)
    for i = shift, precision do counts[i - shift + 1] = s[i + 2] end
  end
  local left = start + size - now
  local estimate = estimateOf(counts, left, size)
  if estimate + cost > limit + 1e-9 then
    local wait = timeUntilBelow(counts, left, size, estimate + cost - limit)
    return denied(floorUnits(limit - estimate), resetAfterOf(counts, left, size), wait)
  end
  if cost == 0 then return admitted(floorUnits(limit - estimate), resetAfterOf(counts, left, size), 0) end
  counts[precision + 1] = counts[precision + 1] + cost
  local state = { start }
  for i = 1, precision + 1 do state[i + 1] = counts[i] end
  return admitted(floorUnits(limit - estimate - cost), resetAfterOf(counts, left, size), 0, state)
end

-- state = { time1, cost1, time2, cost2, ... }, oldest first
local function slidingLog(s, now, p, cost)
  local limit, window = p.limit, p.window
  s = s or {}
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
    return admitted(limit - used, resetAfter, 0)
  end
  local state = {}
  for i = 2 * first - 1, 2 * n do state[#state + 1] = s[i] end
  if newest == now then
    state[#state] = state[#state] + cost
  else
    state[#state + 1] = now
    state[#state + 1] = cost
  end
  return admitted(limit - used - cost, window, 0, state)
end

-- state = { tokens, updated }; a token is \`window\` units and \`limit\` units drip in per ms
local function tokenBucket(s, now, p, cost)
  local limit, window, burst, maxDelay = p.limit, p.window, p.burst, p.maxDelay
  local capacity = burst * window
  local tokens = capacity
  if s then tokens = math.min(capacity, s[1] + math.max(0, now - s[2]) * limit) end
  local nextTokens = tokens - cost * window
  local debtAllowed = maxDelay * limit
  if nextTokens < -debtAllowed then
    local waitForTokens = ceilMs((-nextTokens - debtAllowed) / limit)
    return denied(math.max(0, math.floor(tokens / window)), ceilMs((capacity - tokens) / limit), waitForTokens)
  end
  local delay = 0
  if nextTokens < 0 then delay = ceilMs(-nextTokens / limit) end
  return admitted(
    math.max(0, math.floor(nextTokens / window)),
    ceilMs((capacity - nextTokens) / limit),
    delay,
    { nextTokens, now }
  )
end

-- state = { tat }
local function gcra(s, now, p, cost)
  local limit, window, burst, maxDelay = p.limit, p.window, p.burst, p.maxDelay
  local interval = window / limit
  local tolerance = interval * burst
  local backlog = 0
  if s then backlog = math.max(0, s[1] - now) end
  local nextBacklog = backlog + interval * cost
  if nextBacklog > tolerance + maxDelay + EPSILON then
    return denied(
      floorUnits((tolerance - backlog) / interval),
      ceilMs(backlog),
      ceilMs(nextBacklog - tolerance - maxDelay)
    )
  end
  return admitted(
    floorUnits((tolerance - nextBacklog) / interval),
    ceilMs(nextBacklog),
    ceilMs(nextBacklog - tolerance),
    { now + nextBacklog }
  )
end

local ALGORITHMS = {
  ['fixed-window'] = fixedWindow,
  ['sliding-window'] = slidingWindow,
  ['sliding-log'] = slidingLog,
  ['token-bucket'] = tokenBucket,
  ['gcra'] = gcra,
}

local function decode(text)
  if not text then return nil end
  local state = {}
  for token in string.gmatch(text, '%S+') do state[#state + 1] = tonumber(token) end
  return state
end

local function encode(state)
  local parts = {}
  for i = 1, #state do parts[i] = string.format('%.17g', state[i]) end
  return table.concat(parts, ' ')
end

local mode = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  -- Effects replication (the default since Redis 5) lets a script write after TIME.
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local cost = tonumber(ARGV[3])

local policies = {}
for i = 1, #KEYS do
  local at = 3 + (i - 1) * 6
  policies[i] = {
    algorithm = ALGORITHMS[ARGV[at + 1]],
    limit = tonumber(ARGV[at + 2]),
    window = tonumber(ARGV[at + 3]),
    burst = tonumber(ARGV[at + 4]),
    precision = tonumber(ARGV[at + 5]),
    maxDelay = tonumber(ARGV[at + 6]),
  }
end

local stored = redis.call('MGET', unpack(KEYS))
local reply = { 1 }
local function push(allowed, remaining, resetAfter, retryAfter, delay)
  reply[#reply + 1] = allowed and 1 or 0
  reply[#reply + 1] = remaining
  reply[#reply + 1] = resetAfter
  reply[#reply + 1] = retryAfter
  reply[#reply + 1] = delay
  if not allowed then reply[1] = 0 end
end

if mode == 'peek' then
  for i = 1, #KEYS do
    local p, s = policies[i], decode(stored[i])
    local current = p.algorithm(s, now, p, 0)
    local nextOne = p.algorithm(s, now, p, 1)
    push(nextOne[1], current[2], current[3], nextOne[4], 0)
  end
  return reply
end

local results = {}
for i = 1, #KEYS do
  local p = policies[i]
  local r = p.algorithm(decode(stored[i]), now, p, cost)
  results[i] = r
  push(r[1], r[2], r[3], r[4], r[5])
end
-- All-or-nothing: a denied request writes nothing anywhere.
if reply[1] == 1 and cost > 0 then
  for i = 1, #KEYS do
    local r = results[i]
    redis.call('SET', KEYS[i], encode(r[6]), 'PX', r[3] + EXPIRY_SLACK_MS)
  end
end
return reply
`
