import { nowFromArgv } from './now.js'
import { SLIDING_LOG_LUA } from './sliding-log.js'

/**
 * The block script: blocks one client key for a duration in every policy of a set that has
 * `blockFor` (its seventh double), as @sluice/core's blockUntil: the block is the first 8 bytes
 * of the state (see DECIDE_LUA; a sliding log's trailer, see sliding-log.ts), a later block
 * already there stays, the algorithm's state is kept.
 *
 * KEYS: one per policy, all under one hash tag, as for DECIDE_LUA.
 * ARGV: [1] the policies as for DECIDE_LUA, [2] the duration in ms, [3] optional: now (tests).
 * Reply: nil.
 * Writes: each blocking policy's key, with PSETEX to the later of its current expiry and the end
 *         of the block plus DECIDE_LUA's slack.
 */
export const BLOCK_LUA = `
local EXPIRY_SLACK_MS = 1000
local policies = ARGV[1]
local duration = tonumber(ARGV[2])
${nowFromArgv(3)}
${SLIDING_LOG_LUA}
for i = 1, #KEYS do
  if struct.unpack('<d', policies, 64 * i - 15) > 0 then
    if struct.unpack('<d', policies, 64 * i - 63) == 3 then
      -- sliding-log: the block is a field of the log's trailer (see sliding-log.ts).
      logFunctions()
      local log = logRead(KEYS[i])
      local blockedUntil = math.max(now + duration, log.blockedUntil)
      local expiry = math.max(redis.call('PTTL', KEYS[i]), blockedUntil - now + EXPIRY_SLACK_MS)
      logWrite(KEYS[i], logBlock(log, blockedUntil, expiry))
    else
      local stored = redis.call('GET', KEYS[i])
      local blockedUntil, inner = now + duration, ''
      if stored then
        blockedUntil = math.max(blockedUntil, struct.unpack('<d', stored))
        inner = string.sub(stored, 9)
      end
      local expiry = math.max(redis.call('PTTL', KEYS[i]), blockedUntil - now + EXPIRY_SLACK_MS)
      redis.call('PSETEX', KEYS[i], string.format('%d', expiry), struct.pack('<d', blockedUntil) .. inner)
    end
  end
end
return nil
`
