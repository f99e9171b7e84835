import { ALGORITHM_CODES, EXPIRY_SLACK_MS, policyLua, WARM_CODES } from '../protocol.js'
import type { AlgorithmLua, BucketLua } from './algorithm.js'

/**
 * Mirrors packages/core/src/algorithms/token-bucket.ts (tokenBucket, storedTokens,
 * refundTokenBucket, penalizeTokenBucket) line for line. State: tokens, updated, burst, limit; a
 * token is `window` units and `limit` units drip in per ms.
 */
export const TOKEN_BUCKET: BucketLua = {
  code: ALGORITHM_CODES['token-bucket'],
  /**
   * As core's storedTokens (same formulas, same order of operations): the bucket refilled to now
   * at the rate it was written at, then read against this burst so the units used stay used (a
   * named policy's limit may change under its state), and its update time. A state written
   * before the burst or limit was kept (16 or 24 bytes) is read as of the policy's.
   */
  functions: `
local function storedTokens(state, now, limit, window, burst)
  local t, u = struct.unpack('<dd', state)
  local b, l = burst, limit
  if #state >= 24 then b = struct.unpack('<d', state, 17) end
  if #state >= 32 then l = struct.unpack('<d', state, 25) end
  local refilled = math.min(b * window, t + math.max(0, now - u) * l)
  if b == burst then return refilled, u end
  return math.max(burst * window - (b * window - refilled), math.min(0, refilled)), u
end
`,
  decide: `
    local capacity = burst * window
    local tokens = capacity
    if state then
      local t, u = storedTokens(state, now, limit, window, burst)
      -- As core's tokensAt: updated more than a window after now reads as a full bucket.
      if u - now <= window then tokens = t end
    end
    local nextTokens = tokens - c * window
    local debtAllowed = maxDelay * limit
    if nextTokens < -debtAllowed then
      local waitForTokens = ceilMs((-nextTokens - debtAllowed) / limit)
      return false, math.max(0, math.floor(tokens / window)), ceilMs((capacity - tokens) / limit), math.max(waitForTokens, 1), 0
    end
    local delay = 0
    if nextTokens < 0 then delay = ceilMs(-nextTokens / limit) end
    local remaining = math.max(0, math.floor(nextTokens / window))
    local nextAfter = 0
    if remaining == 0 then nextAfter = math.max(1, ceilMs((window - nextTokens) / limit)) end
    return true, remaining, ceilMs((capacity - nextTokens) / limit), nextAfter, delay,
      struct.pack('<dddd', nextTokens, now, burst, limit)
`,
  refund: `
    local capacity = burst * window
    local tokens = storedTokens(state, now, limit, window, burst)
    if tokens == capacity then return nil end
    return struct.pack('<dddd', math.min(capacity, tokens + c * window), now, burst, limit)
`,
  penalize: `
    local capacity = burst * window
    local tokens = capacity
    if state then tokens = storedTokens(state, now, limit, window, burst) end
    local nextTokens = tokens - c * window
    return struct.pack('<dddd', nextTokens, now, burst, limit), math.ceil((capacity - nextTokens) / limit)
`,
  /** As the decision (core's tokensAt): the bucket at now, read against this burst. */
  leaseFunctions: `
local function tokensNow(state, limit, window, burst)
  local capacity = burst * window
  if not state then return capacity end
  local t, u = storedTokens(state, now, limit, window, burst)
  if u - now > window then return capacity end
  return t
end
`,
  // A give-back goes back in the state's own terms (its burst and rate, no refill, `updated`
  // kept): refilling to now at an old plan's rate would credit the time since the last write at
  // the wrong rate. A grant is units taken as if admitted, written as the decision does. A state
  // Redis forgot is first rebuilt from the node's view (see lease.ts), and what the node admitted
  // alone is charged whatever is left (the bucket may go below empty, down to a
  // burst below: it refills later).
  // A view is read no lower than a burst below empty (charges stop there), so a view refills within two bursts' time.
  reset: `
      state = struct.pack('<dddd', burst * window, now, burst, limit)
      redis.call('PSETEX', key, string.format('%d', ceilMs(2 * burst * window / limit) + ${EXPIRY_SLACK_MS}), state)
`,
  lease: `
    if not state and hasView == 1 then
      local refilled = math.min(burst * window, viewA + math.max(0, now - viewB) * limit)
      if refilled < burst * window then
        state = struct.pack('<dddd', refilled, now, burst, limit)
        redis.call('PSETEX', key, string.format('%d', ceilMs((burst * window - refilled) / limit) + ${EXPIRY_SLACK_MS}), state)
      end
    end
    if charge > 0 then
      local tokens = math.max(-burst * window, tokensNow(state, limit, window, burst) - charge * window)
      state = struct.pack('<dddd', tokens, now, burst, limit)
      redis.call('PSETEX', key, string.format('%d', ceilMs((burst * window - tokens) / limit) + ${EXPIRY_SLACK_MS}), state)
    end
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
      granted = grantOf(math.floor(tokens / window), burst, amount, whole)
      if granted > 0 then
        tokens = tokens - granted * window
        local full = ceilMs((burst * window - tokens) / limit)
        redis.call('PSETEX', key, string.format('%d', full + ${EXPIRY_SLACK_MS}), struct.pack('<dddd', tokens, now, burst, limit))
      end
      a = tokens
    end
    b = now
`,
}

/**
 * Mirrors the warming token bucket of packages/core/src/algorithms/token-bucket.ts
 * (decideWarmBucket, bucketCold, takeWarmBucket, and refundTokenBucket and penalizeTokenBucket with
 * `warmup`) line for line, on warm-up.ts's functions. State: tokens, updated, burst, limit, cold.
 */
export const WARM_TOKEN_BUCKET: AlgorithmLua = {
  code: WARM_CODES['token-bucket'],
  /** As core's bucketCold: it cools from when it was full, refilled at the rate it was written at. */
  functions: `
local function bucketCold(state, now, limit, window, burst, warmup, coldFactor)
  local t, u, b, l, k = struct.unpack('<ddddd', state)
  local fullAt = u + (b * window - t) / l
  return cooled(math.min(k, maxColdOf(limit, window, warmup, coldFactor)), now - fullAt, limit, window, warmup, coldFactor)
end
-- As core's takeWarmBucket: tokens, coldness and backlog at now; a bucket updated more than a
-- window after now reads as a new one.
local function takeBucket(state, now, limit, window, burst, warmup, coldFactor)
  local capacity = burst * window
  if state then
    local t, u = storedTokens(state, now, limit, window, burst)
    if u - now <= window then
      return t, bucketCold(state, now, limit, window, burst, warmup, coldFactor), (capacity - t) / limit
    end
  end
  return capacity, maxColdOf(limit, window, warmup, coldFactor), 0
end
`,
  decide: `
    local warmup, coldFactor = ${policyLua('i', ['warmup', 'coldFactor'])}
    local tokens, cold, backlog = warm.takeBucket(state, now, limit, window, burst, warmup, coldFactor)
    local ok, remaining, resetAfter, retryAfter, delay = warm.decideWarm(backlog, cold, c, limit, window, burst, maxDelay, warmup, coldFactor)
    if not ok then return ok, remaining, resetAfter, retryAfter, delay end
    return true, remaining, resetAfter, retryAfter, delay,
      struct.pack('<ddddd', tokens - warm.coldCost(cold, c, limit, window, warmup, coldFactor) * limit, now, burst, limit, cold - math.min(c, cold))
`,
  // A bucket not full at now has not been full since its update: its coldness stands.
  refund: `
    local capacity = burst * window
    local tokens = storedTokens(state, now, limit, window, burst)
    if tokens == capacity then return nil end
    local _, _, _, _, cold = struct.unpack('<ddddd', state)
    return struct.pack('<ddddd', math.min(capacity, tokens + c * window), now, burst, limit, cold)
`,
  // As a consume would write; it drains when the state is as a new key's (refilled, then cooled).
  penalize: `
    local warmup, coldFactor = ${policyLua('i', ['warmup', 'coldFactor'])}
    local tokens, cold = warm.takeBucket(state, now, limit, window, burst, warmup, coldFactor)
    local nextTokens = tokens - warm.coldCost(cold, c, limit, window, warmup, coldFactor) * limit
    local left = cold - math.min(c, cold)
    local maxCold = warm.maxColdOf(limit, window, warmup, coldFactor)
    return struct.pack('<ddddd', nextTokens, now, burst, limit, left),
      math.ceil((burst * window - nextTokens) / limit + ((maxCold - left) * warmup) / maxCold)
`,
}
