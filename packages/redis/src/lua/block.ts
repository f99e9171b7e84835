import { BLOCK } from './algorithms/block.js'
import { SLIDING_LOG } from './algorithms/sliding-log.js'
import { nowFromArgv, policyLua } from './protocol.js'

/**
 * The block script: blocks one client key for a duration in every policy of a set that has
 * `blockFor`, as @sluice/core's blockUntil (algorithms/block.ts; a sliding log's block is in its
 * trailer, algorithms/sliding-log.ts).
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policy records (protocol.ts), [2] the duration in ms, [3] optional: now (tests).
 * Reply: nil.
 * Writes: each blocking policy's key, with PSETEX to the later of its current expiry and the end
 *         of the block plus EXPIRY_SLACK_MS.
 */
export const BLOCK_LUA = `
local policies = ARGV[1]
local duration = tonumber(ARGV[2])
${nowFromArgv(3)}
${SLIDING_LOG.functions}
for i = 1, #KEYS do
  if ${policyLua('i', ['blockFor'])} > 0 then
    if ${policyLua('i', ['code'])} == ${SLIDING_LOG.code} then
${SLIDING_LOG.block}
    else
${BLOCK.block}
    end
  end
end
return nil
`
