import { EXPIRY_SLACK_MS, policyLua } from '../protocol.js'

/**
 * Mirrors packages/core/src/algorithms/block.ts (blocking, refundBlocking, penalizeBlocking,
 * blockUntil): a policy with blockFor keeps until when the key is blocked, 8 bytes before the
 * algorithm's state (a sliding log keeps it in its trailer instead, see sliding-log.ts).
 */
export const BLOCK = {
  /**
   * As core's blocking(): while blocked, every request is denied; a request (c > 0) the algorithm
   * denies starts a block, and then (eighth value) the state must be written although the request
   * is denied. Called by decide, which it calls back for the algorithm's own decision (`bare`).
   */
  decideFunctions: `
local decide
local function decideBlocking(i, state, c, blockFor)
  local blockedUntil, inner = 0, false
  if state then
    blockedUntil = struct.unpack('<d', state)
    if #state > 8 then inner = string.sub(state, 9) end
  end
  if blockedUntil > now then
    local _, _, quotaReset = decide(i, inner, 0, true)
    return false, 0, math.max(blockedUntil - now, quotaReset), blockedUntil - now, 0
  end
  local ok, remaining, resetAfter, retryAfter, delay, next, keep = decide(i, inner, c, true)
  if ok then
    -- In place, the prefix (blockedUntil, unchanged) stays; otherwise the whole state goes.
    if next then
      if keep then keep = keep + 8 else next = struct.pack('<d', blockedUntil) .. next end
    end
    return ok, remaining, resetAfter, retryAfter, delay, next, keep
  end
  if c == nil or c == 0 then return ok, remaining, resetAfter, retryAfter, delay end
  local blocked = struct.pack('<d', now + blockFor) .. (inner or '')
  return false, 0, math.max(resetAfter, blockFor), math.max(retryAfter, blockFor), 0, blocked, false, true
end
`,
  /** As core's refundBlocking(): the algorithm's state follows the block, which stays. */
  refundFunctions: `
local function refund(i, state, c)
  if ${policyLua('i', ['blockFor'])} == 0 then return refundAlgorithm(i, state, c) end
  if #state <= 8 then return nil end
  local inner = refundAlgorithm(i, string.sub(state, 9), c)
  if inner then return string.sub(state, 1, 8) .. inner end
  return nil
end
`,
  /** As core's penalizeBlocking(): the block stays before the algorithm's penalized state. */
  penalize: `
    local blockedUntil, inner = 0, false
    if stored then
      blockedUntil = struct.unpack('<d', stored)
      if #stored > 8 then inner = string.sub(stored, 9) end
    end
    local next
    next, drains = penalize(i, inner, cost)
    state = struct.pack('<d', blockedUntil) .. next
    drains = math.max(drains, blockedUntil - now)
`,
  /** As core's blockUntil(): a later block already there stays, the algorithm's state is kept. */
  block: `
    local stored = redis.call('GET', KEYS[i])
    local blockedUntil, inner = now + duration, ''
    if stored then
      blockedUntil = math.max(blockedUntil, struct.unpack('<d', stored))
      inner = string.sub(stored, 9)
    end
    local expiry = math.max(redis.call('PTTL', KEYS[i]), blockedUntil - now + ${EXPIRY_SLACK_MS})
    redis.call('PSETEX', KEYS[i], string.format('%d', expiry), struct.pack('<d', blockedUntil) .. inner)
`,
} as const
