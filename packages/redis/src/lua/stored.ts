/**
 * A token bucket's and a GCRA schedule's stored state read against the policy's burst or limit,
 * as core's `storedTokens` and `storedBacklog` (same formulas, same order of operations): a named
 * policy's limit may change under its state (a plan change), and the units used so far stay
 * used. The bucket's state is tokens, updated, burst, limit (storedTokens answers the bucket refilled
 * to now at the rate it was written at, then read against the burst, and its update time); the
 * schedule's TAT, limit (storedBacklog answers how far the TAT lies after now, as core's does). A
 * state written before the burst or limit was kept (16 or 24 bytes; 8 for a TAT) is read as of the
 * policy's.
 */
export const STORED_LUA = `
local function storedTokens(state, now, limit, window, burst)
  local t, u = struct.unpack('<dd', state)
  local b, l = burst, limit
  if #state >= 24 then b = struct.unpack('<d', state, 17) end
  if #state >= 32 then l = struct.unpack('<d', state, 25) end
  local refilled = math.min(b * window, t + math.max(0, now - u) * l)
  if b == burst then return refilled, u end
  return math.max(burst * window - (b * window - refilled), math.min(0, refilled)), u
end

local function storedBacklog(state, now, limit, window, burst, maxDelay)
  local backlog = struct.unpack('<d', state) - now
  if #state < 16 then return backlog end
  local l = struct.unpack('<d', state, 9)
  if l == limit or backlog <= 0 then return backlog end
  return math.min((backlog * l) / limit, math.max(backlog, (window / limit) * burst + maxDelay))
end
`
