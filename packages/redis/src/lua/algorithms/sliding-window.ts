import { ALGORITHM_CODES, DOUBLES, ESTIMATE_EPSILON_LUA } from '../protocol.js'
import type { AlgorithmLua } from './algorithm.js'

/**
 * Mirrors packages/core/src/algorithms/sliding-window.ts (slidingWindow, timeUntilBelow,
 * resetAfterOf, refundSlidingWindow, penalizeSlidingWindow) line for line. State: start, then the
 * counts of precision + 1 sub-windows, oldest first (the count at 0-based index j is the double at
 * byte 9 + 8 j).
 */
export const SLIDING_WINDOW: AlgorithmLua = {
  code: ALGORITHM_CODES['sliding-window'],
  functions: '',
  /**
   * As core's timeUntilBelow: the estimate falls linearly while the oldest sub-window slides out,
   * then the next one: walk those segments until `need` has drained.
   */
  decideFunctions: `
local function untilBelow(counts, left, size, need)
  local elapsed = 0
  for j = 1, #counts do
    local count = counts[j]
    local span = size
    if j == 1 then span = left end
    local drop = (count * span) / size
    if count > 0 and drop >= need - ${ESTIMATE_EPSILON_LUA} then return ceilMs(elapsed + (need * size) / count) end
    need = need - drop
    elapsed = elapsed + span
  end
  return ceilMs(elapsed)
end
`,
  decide: `
    local size = window / precision
    local start = now - math.fmod(now, size)
    local counts
    local same, keep = false, false
    local stored = state and struct.unpack('<d', state)
    -- As core's sliding window: a start more than a window after this one comes from a clock that
    -- stepped back (or a glitch forward) and reads as no state, so the step costs at most a window.
    if stored and stored >= start and stored - start <= window then
      -- The same sub-window, or a clock that stepped back: the counts where they are, read in
      -- one call (its last value, the position after them, is dropped).
      counts = { struct.unpack(string.sub('${DOUBLES}', 1, precision + 2), state, 9) }
      counts[precision + 2] = nil
      same = stored == start
    else
      counts = {}
      for j = 1, precision + 1 do counts[j] = 0 end
      if stored and stored < start then
        local shift = (start - stored) / size
        for j = shift, precision do counts[j - shift + 1] = struct.unpack('<d', state, 9 + 8 * j) end
      end
    end
    -- left: the part of the oldest sub-window still inside; the estimate weights it by that. The
    -- whole counts are summed first, as core's running total has them, so the floats agree.
    local left = start + size - now
    local whole = 0
    for j = 2, #counts do whole = whole + counts[j] end
    local estimate = (counts[1] * left) / size + whole
    local ok, remaining, retryAfter, next = true, 0, 0, nil
    if estimate + c > limit + ${ESTIMATE_EPSILON_LUA} then
      ok, remaining, retryAfter = false, floorUnits(limit - estimate), math.max(untilBelow(counts, left, size, estimate + c - limit), 1)
    else
      if c > 0 then
        local newest = counts[precision + 1] + c
        counts[precision + 1] = newest
        if same then
          -- Only the newest count changes: it alone is written, at its offset.
          keep = 8 * precision + 8
          next = struct.pack('<d', newest)
        else
          next = struct.pack(string.sub('${DOUBLES}', 1, precision + 3), start, unpack(counts))
        end
      end
      remaining = floorUnits(limit - estimate - c)
      if remaining == 0 then retryAfter = math.max(1, untilBelow(counts, left, size, estimate + c + 1 - limit)) end
    end
    -- resetAfter: when the newest non-empty sub-window (after this request) has slid out.
    local resetAfter = 0
    for j = #counts, 1, -1 do
      if counts[j] > 0 then
        if j == 1 then resetAfter = left else resetAfter = left + (j - 1) * size end
        break
      end
    end
    return ok, remaining, resetAfter, retryAfter, 0, next, keep
`,
  // The state keeps its start, so the decision's in-place SETRANGE (same start) keeps a right expiry.
  refund: `
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
`,
  penalize: `
    local size = window / precision
    local start = now - math.fmod(now, size)
    local counts = {}
    for j = 1, precision + 1 do counts[j] = 0 end
    if state then
      local stored = struct.unpack('<d', state)
      local shift = math.max(0, (start - stored) / size)
      for j = shift, precision do counts[j - shift + 1] = struct.unpack('<d', state, 9 + 8 * j) end
    end
    counts[precision + 1] = counts[precision + 1] + c
    return struct.pack('<' .. string.rep('d', precision + 2), start, unpack(counts)), start + size - now + precision * size
`,
}
