/**
 * A token bucket's and a GCRA schedule's stored state read against the policy's burst or limit,
 * as core's `storedTokens` and `storedBacklog` (same formulas, same order of operations): a named
 * policy's limit may change under its state (a plan change), and the units used so far stay
 * used. The bucket's state is tokens, updated, burst; the schedule's TAT, limit (storedBacklog answers
 * how far the TAT lies after now, as core's does). A state written
 * before the burst or limit was kept (16 or 8 bytes) is read as of the policy's.
 */
export const STORED_LUA = `
local function storedTokens(state, window, burst)
  local t, u = struct.unpack('<dd', state)
  if #state < 24 then return t, u end
  local b = struct.unpack('<d', state, 17)
  if b == burst then return t, u end
  return math.max(burst * window - (b * window - t), math.min(0, t)), u
end

local function storedBacklog(state, now, limit, window, burst, maxDelay)
  local backlog = struct.unpack('<d', state) - now
  if #state < 16 then return backlog end
  local l = struct.unpack('<d', state, 9)
  if l == limit or backlog <= 0 then return backlog end
  return math.min((backlog * l) / limit, math.max(backlog, (window / limit) * burst + maxDelay))
end
`
