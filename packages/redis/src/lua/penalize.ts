import { BLOCK } from './algorithms/block.js'
import { FIXED_WINDOW } from './algorithms/fixed-window.js'
import { GCRA, WARM_GCRA } from './algorithms/gcra.js'
import { SLIDING_LOG } from './algorithms/sliding-log.js'
import { SLIDING_WINDOW } from './algorithms/sliding-window.js'
import { TOKEN_BUCKET, WARM_TOKEN_BUCKET } from './algorithms/token-bucket.js'
import { makeWarmLua } from './algorithms/warm-up.js'
import { EXPIRY_SLACK_MS, nowFromArgv, policyLua } from './protocol.js'

/**
 * The penalty script: takes `cost` units from every policy of a set for one client key whatever
 * their limits, in one call, each algorithm by its module's `penalize` fragment (algorithms/;
 * a blocking policy's block stays, algorithms/block.ts), on the state layout of DECIDE_LUA.
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policy records (protocol.ts), [2] the cost, [3] optional: now in epoch ms (tests).
 * Reply: nil.
 * Writes: every key, with PSETEX until the new state has drained (and any block has ended),
 *         plus EXPIRY_SLACK_MS (a sliding log: in place, see algorithms/sliding-log.ts).
 */
export const PENALIZE_LUA = `
local policies = ARGV[1]
local cost = tonumber(ARGV[2])
${nowFromArgv(3)}
${SLIDING_LOG.functions}
${FIXED_WINDOW.functions}
${TOKEN_BUCKET.functions}
${GCRA.functions}
-- The warming fragments' functions: made by the first warming policy (makeWarmLua).
local warm

-- Policy i's state (or false) with cost c taken: the new state, and how long until it drains.
local function penalize(i, state, c)
  local code, limit, window, burst, precision, maxDelay = ${policyLua('i', ['code', 'limit', 'window', 'burst', 'precision', 'maxDelay'])}
  if code == ${FIXED_WINDOW.code} then
${FIXED_WINDOW.penalize}
  end
  if code == ${SLIDING_WINDOW.code} then
${SLIDING_WINDOW.penalize}
  end
  if code == ${TOKEN_BUCKET.code} then
${TOKEN_BUCKET.penalize}
  end
  if code > ${GCRA.code} then
${makeWarmLua(WARM_TOKEN_BUCKET.functions + WARM_GCRA.functions, false)}
    if code == ${WARM_TOKEN_BUCKET.code} then
${WARM_TOKEN_BUCKET.penalize}
    end
${WARM_GCRA.penalize}
  end
${GCRA.penalize}
end

for i = 1, #KEYS do
  local code, window = ${policyLua('i', ['code'])}, ${policyLua('i', ['window'])}
  local stored = false
  if code ~= ${SLIDING_LOG.code} then stored = redis.call('GET', KEYS[i]) end
  local state, drains
  if code == ${SLIDING_LOG.code} then
${SLIDING_LOG.penalize}
  elseif ${policyLua('i', ['blockFor'])} == 0 then
    state, drains = penalize(i, stored, cost)
  else
${BLOCK.penalize}
  end
  if state then redis.call('PSETEX', KEYS[i], string.format('%d', drains + ${EXPIRY_SLACK_MS}), state) end
end
return nil
`
