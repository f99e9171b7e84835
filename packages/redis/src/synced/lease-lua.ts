import { nowFromArgv } from '../lua/now.js'

/**
 * The lease script: for many token-bucket or GCRA states at once, takes a grant of units out of
 * each state ahead of time, or gives back what a node did not spend. The states are RedisStore's
 * (`<prefix>{<key>}:b:<policy id>`, DECIDE_LUA's binary layout): a grant is units taken as if
 * admitted, so RedisStore, a leasing node and an exact decision all read one state.
 *
 * KEYS: one per operation (a key's policy); on a Cluster all in one slot.
 * ARGV: [1] the policies, four little-endian doubles per operation: DECIDE_LUA's algorithm code,
 *       limit, window and burst, [2] one little-endian double
 *       per operation: units wanted (> 0) or given back (< 0), [3] optional: now in epoch ms (tests).
 * Reply: little-endian doubles: now, then per operation the units granted and the state after
 *        it (token bucket: tokens and updated; GCRA: tat and 0).
 * Grants: at most what is left; once under 10 % of the burst is left, at most half of that
 *         (seed 001 §4.4 (5)), so the last units go out in ever smaller grants and then none:
 *         the node decides the key per request.
 * Give-backs: as REFUND_LUA (refundTokenBucket, refundGcra): never above a full bucket or
 *         before now, SET ... KEEPTTL, a missing (full) state stays missing.
 */
export const LEASE_LUA = `
local EXPIRY_SLACK_MS = 1000
local policies, amounts = ARGV[1], ARGV[2]
${nowFromArgv(3)}

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
    -- token-bucket; state: tokens, updated (a token is \`window\` units, \`limit\` units drip in per ms)
    local capacity = burst * window
    local tokens = capacity
    if state then
      local t, u = struct.unpack('<dd', state)
      tokens = math.min(capacity, t + math.max(0, now - u) * limit)
    end
    if amount < 0 then
      if state and tokens < capacity then
        tokens = math.min(capacity, tokens - amount * window)
        redis.call('SET', key, struct.pack('<dd', tokens, now), 'KEEPTTL')
      end
    else
      granted = grantOf(math.floor(tokens / window), burst, amount)
      if granted > 0 then
        tokens = tokens - granted * window
        local full = math.ceil((capacity - tokens) / limit)
        redis.call('PSETEX', key, string.format('%d', full + EXPIRY_SLACK_MS), struct.pack('<dd', tokens, now))
      end
    end
    a, b = tokens, now
  else
    -- gcra; state: tat
    local interval = window / limit
    local backlog = 0
    if state then backlog = math.max(0, struct.unpack('<d', state) - now) end
    if amount < 0 then
      if backlog > 0 then
        backlog = math.max(0, backlog + interval * amount)
        redis.call('SET', key, struct.pack('<d', now + backlog), 'KEEPTTL')
      end
    else
      -- The units DECIDE_LUA would admit: backlog + interval * c <= tolerance + 1e-6.
      local available = math.max(0, math.floor((interval * burst + 1e-6 - backlog) / interval))
      granted = grantOf(available, burst, amount)
      if granted > 0 then
        backlog = backlog + interval * granted
        redis.call('PSETEX', key, string.format('%d', math.ceil(backlog) + EXPIRY_SLACK_MS), struct.pack('<d', now + backlog))
      end
    end
    a = now + backlog
  end
  reply[i + 1] = struct.pack('<ddd', granted, a, b)
end
return table.concat(reply)
`
