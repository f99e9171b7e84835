import { ALGORITHM_CODES, policyLua } from '../protocol.js'
import type { AlgorithmLua } from './algorithm.js'

/**
 * Mirrors packages/core/src/algorithms/fixed-window.ts (fixedWindow, refundFixedWindow,
 * penalizeFixedWindow, windowStart, knownStart, startAt) line for line. State: start, count.
 * `firstRequest` (the record's flag for `start: 'first-request'`) is 1 or 0.
 */
export const FIXED_WINDOW: AlgorithmLua = {
  code: ALGORITHM_CODES['fixed-window'],
  /**
   * As core's windowStart: the start of the window holding `t`, `offset` after a multiple of
   * `window` since the epoch (a calendar period's start; 0 for a plain fixed window). Lua's fmod
   * keeps the dividend's sign, so a time before the offset wraps into the window before.
   */
  functions: `
local function windowStart(t, window, offset)
  local into = math.fmod(t - offset, window)
  if into < 0 then into = into + window end
  return t - into
end
-- As core's knownStart: \`known\` (a state's start, or nil) while t is inside that window; else
-- the aligned start, or t itself for a first-request window.
local function knownStart(t, window, offset, firstRequest, known)
  if known and t >= known and t - known < window then return known end
  if firstRequest == 1 then return t end
  return windowStart(t, window, offset)
end
-- As core's startAt: where a write at t goes.
local function startAt(t, window, offset, firstRequest, known)
  if firstRequest == 1 then return knownStart(t, window, offset, firstRequest, known) end
  return windowStart(t, window, offset)
end
`,
  decide: `
    local offset, firstRequest = ${policyLua('i', ['offset', 'firstRequest'])}
    local count = 0
    local keep = false
    local s, n = nil, 0
    if state then s, n = struct.unpack('<dd', state) end
    local start = startAt(now, window, offset, firstRequest, s)
    if s == start then count, keep = n, 8 end
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
`,
  refund: `
    local start, count = struct.unpack('<dd', state)
    local offset, firstRequest = ${policyLua('i', ['offset', 'firstRequest'])}
    if count == 0 or start ~= startAt(now, window, offset, firstRequest, start) then return nil end
    if admitted and startAt(admitted, window, offset, firstRequest, start) ~= start then return nil end
    return struct.pack('<dd', start, math.max(0, count - c))
`,
  penalize: `
    local offset, firstRequest = ${policyLua('i', ['offset', 'firstRequest'])}
    local s, n = nil, 0
    if state then s, n = struct.unpack('<dd', state) end
    local start = startAt(now, window, offset, firstRequest, s)
    local count = 0
    if s == start then count = n end
    return struct.pack('<dd', start, count + c), start + window - now
`,
}
