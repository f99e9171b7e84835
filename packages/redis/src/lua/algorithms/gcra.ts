import { ALGORITHM_CODES, EPSILON_LUA, EXPIRY_SLACK_MS, policyLua, WARM_CODES } from '../protocol.js'
import type { AlgorithmLua, BucketLua } from './algorithm.js'

/**
 * Mirrors packages/core/src/algorithms/gcra.ts (gcra, storedBacklog, backlogOf, refundGcra,
 * penalizeGcra) line for line. State: tat, limit.
 */
export const GCRA: BucketLua = {
  code: ALGORITHM_CODES.gcra,
  /**
   * As core's storedBacklog (same formulas, same order of operations): how far the TAT lies after
   * now, read at this limit when it was written at another (a named policy's plan change) so the
   * units used stay used. A state written before the limit was kept (8 bytes) is read as of the
   * policy's.
   */
  functions: `
local function storedBacklog(state, now, limit, window, burst, maxDelay)
  local backlog = struct.unpack('<d', state) - now
  if #state < 16 then return backlog end
  local l = struct.unpack('<d', state, 9)
  if l == limit or backlog <= 0 then return backlog end
  return math.min((backlog * l) / limit, math.max(backlog, (window / limit) * burst + maxDelay))
end
`,
  decide: `
    local interval = window / limit
    local tolerance = interval * burst
    local backlog = 0
    if state then backlog = storedBacklog(state, now, limit, window, burst, maxDelay) end
    -- As core's backlogOf: a TAT more than a window (and 1 ms) beyond tolerance + maxDelay reads as none.
    if backlog > tolerance + maxDelay + window + 1 then backlog = 0 else backlog = math.max(0, backlog) end
    local nextBacklog = backlog + interval * c
    if nextBacklog > tolerance + maxDelay + ${EPSILON_LUA} then
      return false, floorUnits((tolerance - backlog) / interval), ceilMs(backlog),
        math.max(ceilMs(nextBacklog - tolerance - maxDelay), 1), 0
    end
    local remaining = floorUnits((tolerance - nextBacklog) / interval)
    local nextAfter = 0
    if remaining == 0 then nextAfter = math.max(1, ceilMs(nextBacklog + interval - tolerance)) end
    return true, remaining, ceilMs(nextBacklog), nextAfter, ceilMs(nextBacklog - tolerance),
      struct.pack('<dd', now + nextBacklog, limit)
`,
  refund: `
    local tat = struct.unpack('<d', state)
    if tat <= now then return nil end
    if #state >= 16 and struct.unpack('<d', state, 9) ~= limit then
      tat = now + storedBacklog(state, now, limit, window, burst, maxDelay)
    end
    return struct.pack('<dd', math.max(now, tat - (window / limit) * c), limit)
`,
  // As core's penalizeGcra: up to a window beyond tolerance + maxDelay, the furthest a TAT is read as one.
  penalize: `
    local interval = window / limit
    local backlog = 0
    if state then backlog = math.max(0, storedBacklog(state, now, limit, window, burst, maxDelay)) end
    local nextBacklog = math.min(backlog + interval * c, interval * burst + maxDelay + window)
    return struct.pack('<dd', now + nextBacklog, limit), math.ceil(nextBacklog)
`,
  /**
   * As the decision (core's backlogOf) without maxDelay: how far the TAT lies after now, at this
   * limit; a TAT more than a window (and 1 ms) beyond tolerance reads as none.
   */
  leaseFunctions: `
local function backlogNow(state, limit, window, burst)
  if not state then return 0 end
  local backlog = storedBacklog(state, now, limit, window, burst, 0)
  if backlog > (window / limit) * burst + window + 1 then return 0 end
  return math.max(0, backlog)
end
`,
  // A give-back moves the TAT back at the limit it was written at, never before now. A state
  // Redis forgot is first rebuilt from the node's view (see lease.ts), and what the node admitted
  // alone is charged whatever is left (up to a window beyond tolerance, the furthest read as one).
  // A view's TAT lies at most a window beyond tolerance (charges stop there).
  reset: `
      state = struct.pack('<dd', now, limit)
      redis.call('PSETEX', key, string.format('%d', ceilMs((window / limit) * burst + window) + ${EXPIRY_SLACK_MS}), state)
`,
  lease: `
    local interval = window / limit
    if not state and hasView == 1 and viewA > now then
      state = struct.pack('<dd', viewA, limit)
      redis.call('PSETEX', key, string.format('%d', ceilMs(viewA - now) + ${EXPIRY_SLACK_MS}), state)
    end
    if charge > 0 then
      local backlog = math.min(backlogNow(state, limit, window, burst) + interval * charge, interval * burst + window)
      state = struct.pack('<dd', now + backlog, limit)
      redis.call('PSETEX', key, string.format('%d', ceilMs(backlog) + ${EXPIRY_SLACK_MS}), state)
    end
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
      -- The units the decision would admit: backlog + interval * c <= tolerance + EPSILON.
      local available = math.max(0, math.floor((interval * burst + ${EPSILON_LUA} - backlog) / interval))
      granted = grantOf(available, burst, amount, whole)
      if granted > 0 then
        backlog = backlog + interval * granted
        redis.call('PSETEX', key, string.format('%d', ceilMs(backlog) + ${EXPIRY_SLACK_MS}), struct.pack('<dd', now + backlog, limit))
      end
      a = now + backlog
    end
`,
}

/**
 * Mirrors the warming GCRA of packages/core/src/algorithms/gcra.ts (warmBacklogOf, gcraCold,
 * decideWarmGcra, takeWarmGcra, penalizeWarmGcra, and refundGcra with `warmup`) line for line, on
 * warm-up.ts's functions. State: tat, limit, cold.
 */
export const WARM_GCRA: AlgorithmLua = {
  code: WARM_CODES.gcra,
  /**
   * As core's warmBacklogOf (to a horizon coldFactor times as far as backlogOf's; beyond it, or
   * no state: nil, a new key's) and gcraCold (it cools from when its TAT passed).
   */
  functions: `
local function warmBacklogOf(state, now, limit, window, burst, maxDelay, coldFactor)
  if not state then return nil end
  local backlog = storedBacklog(state, now, limit, window, burst, maxDelay)
  if backlog > coldFactor * ((window / limit) * burst + maxDelay) + window + 1 then return nil end
  return math.max(0, backlog)
end
local function gcraCold(state, now, limit, window, warmup, coldFactor)
  local tat, _, cold = struct.unpack('<ddd', state)
  return cooled(math.min(cold, maxColdOf(limit, window, warmup, coldFactor)), now - tat, limit, window, warmup, coldFactor)
end
`,
  decide: `
    local warmup, coldFactor = ${policyLua('i', ['warmup', 'coldFactor'])}
    local backlog = warm.warmBacklogOf(state, now, limit, window, burst, maxDelay, coldFactor)
    local cold
    if backlog == nil then
      backlog, cold = 0, warm.maxColdOf(limit, window, warmup, coldFactor)
    else
      cold = warm.gcraCold(state, now, limit, window, warmup, coldFactor)
    end
    local ok, remaining, resetAfter, retryAfter, delay = warm.decideWarm(backlog, cold, c, limit, window, burst, maxDelay, warmup, coldFactor)
    if not ok then return ok, remaining, resetAfter, retryAfter, delay end
    return true, remaining, resetAfter, retryAfter, delay,
      struct.pack('<ddd', now + (backlog + warm.coldCost(cold, c, limit, window, warmup, coldFactor)), limit, cold - math.min(c, cold))
`,
  // A TAT still ahead of now has not passed since it was written: its coldness stands.
  refund: `
    local tat, written, cold = struct.unpack('<ddd', state)
    if tat <= now then return nil end
    if written ~= limit then tat = now + storedBacklog(state, now, limit, window, burst, maxDelay) end
    return struct.pack('<ddd', math.max(now, tat - (window / limit) * c), limit, cold)
`,
  // As core's penalizeWarmGcra; it drains when the state is as a new key's (emptied, then cooled).
  penalize: `
    local warmup, coldFactor = ${policyLua('i', ['warmup', 'coldFactor'])}
    local backlog = warm.warmBacklogOf(state, now, limit, window, burst, maxDelay, coldFactor)
    local cold
    if backlog == nil then
      backlog, cold = 0, warm.maxColdOf(limit, window, warmup, coldFactor)
    else
      cold = warm.gcraCold(state, now, limit, window, warmup, coldFactor)
    end
    local nextBacklog = math.max(backlog, math.min(backlog + warm.coldCost(cold, c, limit, window, warmup, coldFactor), (window / limit) * burst + maxDelay + window))
    local left = cold - math.min(c, cold)
    local maxCold = warm.maxColdOf(limit, window, warmup, coldFactor)
    return struct.pack('<ddd', now + nextBacklog, limit, left), math.ceil(nextBacklog + ((maxCold - left) * warmup) / maxCold)
`,
}
