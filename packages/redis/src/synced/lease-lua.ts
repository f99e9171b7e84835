import { nowFromArgv } from '../lua/now.js'
import { STORED_LUA } from '../lua/stored.js'

/**
 * The lease script: for many token-bucket or GCRA states at once, takes a grant of units out of
 * each state ahead of time, or gives back what a node did not spend. The states are RedisStore's
 * (`<prefix>{<key>}:b:<policy id>`, DECIDE_LUA's binary layout): a grant is units taken as if
 * admitted, so RedisStore, a leasing node and an exact decision all read one state.
 *
 * KEYS: one per operation (a key's policy); on a Cluster all in one slot.
 * ARGV: [1] the policies, four little-endian doubles per operation: DECIDE_LUA's algorithm code,
 *       limit, window and burst (a leased policy has no maxDelay), [2] one little-endian double
 *       per operation: units wanted (> 0) or given back (< 0), [3] optional: now in epoch ms (tests).
 * Reply: little-endian doubles: now, then per operation the units granted and the state after
 *        it read against the operation's policy (token bucket: tokens and now; GCRA: tat and 0).
 * Grants: read the state as DECIDE_LUA does (STORED_LUA: a state written under another burst or
 *         limit of a named policy keeps its units used) and write its layout (tokens, updated,
 *         burst, limit; tat, limit), so the next decision under any plan converts it. At most what is
 *         left; once under 10 % of the burst is left, at most half of that (seed 001 §4.4 (5)), so
 *         the last units go out in ever smaller grants and then none: the node decides the key per
 *         request.
 * Give-backs: the units go back in the state's own terms (the burst and rate or the limit it was
 *         written at, no refill, `updated` kept), so a grant taken under one plan and given back after a
 *         change to another undoes exactly its units: refilling to now at the old plan's rate
 *         would credit the time since the last write at the wrong rate. Never above a full bucket
 *         or before now (as refundTokenBucket, refundGcra), SET ... KEEPTTL (the time to full only
 *         shrinks), a missing (full) state stays missing.
 */
export const LEASE_LUA = `
local EXPIRY_SLACK_MS = 1000
local policies, amounts = ARGV[1], ARGV[2]
${nowFromArgv(3)}
${STORED_LUA}

local function ceilMs(ms)
  if ms <= 1e-6 then return 0 end
  return math.ceil(ms - 1e-6)
end

-- As DECIDE_LUA (core's tokensAt): the bucket refilled to now, read against this burst; updated
-- more than a window after now reads as a full bucket.
local function tokensNow(state, limit, window, burst)
  local capacity = burst * window
  if not state then return capacity end
  local t, u = storedTokens(state, now, limit, window, burst)
  if u - now > window then return capacity end
  return t
end

-- As DECIDE_LUA (core's backlogOf) without maxDelay: how far the TAT lies after now, at this
-- limit; a TAT more than a window (and 1 ms) beyond tolerance reads as none.
local function backlogNow(state, limit, window, burst)
  if not state then return 0 end
  local backlog = storedBacklog(state, now, limit, window, burst, 0)
  if backlog > (window / limit) * burst + window + 1 then return 0 end
  return math.max(0, backlog)
end

local function grantOf(available, burst, want)
  local most = available
  if available < 0.1 * burst then most = math.floor(available / 2) end
  if most < want then return math.max(0, most) end
  return want
end

local reply = { struct.pack('<d', now) }
for i = 1, #KEYS do
  local code, limit, window, burst = struct.unpack('<dddd', policies, 32 * i - 31)
  local amount = struct.unpack('<d', amounts, 8 * i - 7)
  local key = KEYS[i]
  local state = redis.call('GET', key)
  local granted, a, b = 0, 0, 0
  if code == 4 then
    -- token-bucket; state: tokens, updated, burst, limit (a token is \`window\` units, \`limit\` units drip in per ms)
    if amount < 0 then
      if state then
        local t, u = struct.unpack('<dd', state)
        local writtenBurst, writtenLimit = burst, limit
        if #state >= 24 then writtenBurst = struct.unpack('<d', state, 17) end
        if #state >= 32 then writtenLimit = struct.unpack('<d', state, 25) end
        local back = math.min(writtenBurst * window, t - amount * window)
        if back > t then
          state = struct.pack('<dddd', back, u, writtenBurst, writtenLimit)
          redis.call('SET', key, state, 'KEEPTTL')
        end
      end
      a = tokensNow(state, limit, window, burst)
    else
      local tokens = tokensNow(state, limit, window, burst)
      granted = grantOf(math.floor(tokens / window), burst, amount)
      if granted > 0 then
        tokens = tokens - granted * window
        local full = ceilMs((burst * window - tokens) / limit)
        redis.call('PSETEX', key, string.format('%d', full + EXPIRY_SLACK_MS), struct.pack('<dddd', tokens, now, burst, limit))
      end
      a = tokens
    end
    b = now
  else
    -- gcra; state: tat, limit
    local interval = window / limit
    if amount < 0 then
      if state then
        local tat = struct.unpack('<d', state)
        if tat > now then
          local written = limit
          if #state >= 16 then written = struct.unpack('<d', state, 9) end
          state = struct.pack('<dd', math.max(now, tat - (window / written) * -amount), written)
          redis.call('SET', key, state, 'KEEPTTL')
        end
      end
      a = now + backlogNow(state, limit, window, burst)
    else
      local backlog = backlogNow(state, limit, window, burst)
      -- The units DECIDE_LUA would admit: backlog + interval * c <= tolerance + 1e-6.
      local available = math.max(0, math.floor((interval * burst + 1e-6 - backlog) / interval))
      granted = grantOf(available, burst, amount)
      if granted > 0 then
        backlog = backlog + interval * granted
        redis.call('PSETEX', key, string.format('%d', ceilMs(backlog) + EXPIRY_SLACK_MS), struct.pack('<dd', now + backlog, limit))
      end
      a = now + backlog
    end
  end
  reply[i + 1] = struct.pack('<ddd', granted, a, b)
end
return table.concat(reply)
`
