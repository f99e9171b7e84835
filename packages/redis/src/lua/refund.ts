import { BLOCK } from './algorithms/block.js'
import { FIXED_WINDOW } from './algorithms/fixed-window.js'
import { GCRA, WARM_GCRA } from './algorithms/gcra.js'
import { SLIDING_LOG } from './algorithms/sliding-log.js'
import { SLIDING_WINDOW } from './algorithms/sliding-window.js'
import { TOKEN_BUCKET, WARM_TOKEN_BUCKET } from './algorithms/token-bucket.js'
import { nowFromArgv, policyLua } from './protocol.js'

/**
 * The refund script: gives back `cost` units to every policy of a set for one client key, in
 * one call, each algorithm by its module's `refund` fragment (algorithms/), on the state layout
 * of DECIDE_LUA.
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policy records (protocol.ts), [2] the cost, [3] how many ms ago the refunded
 *       request was admitted, or '' when unknown, [4] optional: now in epoch ms (tests).
 * Reply: nil.
 * Writes: only a key that holds a state and whose state changes, with SET ... KEEPTTL (a sliding
 *         log: SETRANGE, see algorithms/sliding-log.ts): a refund never lengthens the time back to
 *         full quota, so the expiry the decision set still covers it, and a key never loses its
 *         expiry. A missing key stays missing.
 */
export const REFUND_LUA = `
local policies = ARGV[1]
local cost = tonumber(ARGV[2])
${nowFromArgv(4)}
-- When the refunded request was admitted (nil: unknown), as in core's Refund.
local admitted = nil
if ARGV[3] ~= '' then admitted = now - tonumber(ARGV[3]) end
${SLIDING_LOG.functions}
${FIXED_WINDOW.functions}
${TOKEN_BUCKET.functions}
${GCRA.functions}

-- Policy i's stored state (never false here) with cost c given back: the new state, or nil
-- when nothing changes.
local function refundAlgorithm(i, state, c)
  local code, limit, window, burst, precision, maxDelay = ${policyLua('i', ['code', 'limit', 'window', 'burst', 'precision', 'maxDelay'])}
  if code == ${FIXED_WINDOW.code} then
${FIXED_WINDOW.refund}
  end
  if code == ${SLIDING_WINDOW.code} then
${SLIDING_WINDOW.refund}
  end
  if code == ${TOKEN_BUCKET.code} then
${TOKEN_BUCKET.refund}
  end
  if code > ${GCRA.code} then
    if code == ${WARM_TOKEN_BUCKET.code} then
${WARM_TOKEN_BUCKET.refund}
    end
${WARM_GCRA.refund}
  end
${GCRA.refund}
end
${BLOCK.refundFunctions}
for i = 1, #KEYS do
  local code, limit, window = ${policyLua('i', ['code', 'limit', 'window'])}
  if code == ${SLIDING_LOG.code} then
${SLIDING_LOG.refund}
  else
    local stored = redis.call('GET', KEYS[i])
    if stored then
      local state = refund(i, stored, cost)
      if state then redis.call('SET', KEYS[i], state, 'KEEPTTL') end
    end
  end
end
return nil
`
