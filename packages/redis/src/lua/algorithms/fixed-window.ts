import { ALGORITHM_CODES, policyLua } from '../protocol.js'
import type { AlgorithmLua } from './algorithm.js'

/**
 * Mirrors packages/core/src/algorithms/fixed-window.ts (fixedWindow, refundFixedWindow,
 * penalizeFixedWindow, windowStart) line for line. State: start, count.
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
`,
  decide: `
    local start = windowStart(now, window, ${policyLua('i', ['offset'])})
    local count = 0
    local keep = false
    if state then
      local s, n = struct.unpack('<dd', state)
      if s == start then count, keep = n, 8 end
    end
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
    local offset = ${policyLua('i', ['offset'])}
    if count == 0 or start ~= windowStart(now, window, offset) then return nil end
    if admitted and windowStart(admitted, window, offset) ~= start then return nil end
    return struct.pack('<dd', start, math.max(0, count - c))
`,
  penalize: `
    local start = windowStart(now, window, ${policyLua('i', ['offset'])})
    local count = 0
    if state then
      local s, n = struct.unpack('<dd', state)
      if s == start then count = n end
    end
    return struct.pack('<dd', start, count + c), start + window - now
`,
}
