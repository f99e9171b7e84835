import { GCRA } from './algorithms/gcra.js'
import { TOKEN_BUCKET } from './algorithms/token-bucket.js'
import { CEIL_MS_LUA, LEASE_FIELDS, LEASE_POLICY_BYTES, nowFromArgv, policyLua } from './protocol.js'

/** Doubles per operation in the lease script's ARGV[2]: amount, charge, mode, hasView, and the view's two. */
export const LEASE_OP_DOUBLES = 6
/** Lease operation modes: a grant of up to what is wanted, all of it or none, a reset. */
export const LEASE_MODE = { upTo: 0, whole: 1, reset: 2 } as const

/**
 * The lease script: for many token-bucket or GCRA states at once, takes a grant of units out of
 * each state ahead of time, or gives back what a node did not spend. The states are RedisStore's
 * (`<prefix>{<key>}:b:<policy id>`, DECIDE_LUA's binary layout): a grant is units taken as if
 * admitted, so RedisStore, a leasing node and an exact decision all read one state. Each bucket's
 * read and grant is its module's `lease` fragment (lua/algorithms/token-bucket.ts, gcra.ts).
 *
 * KEYS: one per operation (a key's policy); on a Cluster all in one slot.
 * ARGV: [1] the policies, per operation the first four doubles of its policy record (protocol.ts):
 *       code, limit, window and burst (a leased policy has no maxDelay), [2] per operation
 *       LEASE_OP_DOUBLES little-endian doubles: units wanted (> 0) or given back (< 0); units this
 *       node admitted alone (Redis unreachable) to charge first; the mode (0: a grant of up to what
 *       is wanted, 1: all of it or nothing, 2: a reset); whether a view follows (1) and the view:
 *       the state this node last read, as the reply gives it; [3] optional: now in epoch ms (tests).
 * Reply: little-endian doubles: now, then per operation the units granted and the state after
 *        it read against the operation's policy (token bucket: tokens and now; GCRA: tat and 0).
 * Grants: read the state as DECIDE_LUA does (a state written under another plan of a named
 *         policy keeps its units used) and write it as DECIDE_LUA does, so the next decision
 *         under any plan converts it. At most what is left; once under 10 % of the burst is
 *         left, at most half of that (seed 001 §4.4 (5)), so the last units go out in ever
 *         smaller grants and then none: the node decides the key per request.
 * Give-backs: the units go back in the state's own terms (the plan it was written under, no
 *         refill), so a grant taken under one plan and given back after a change to another
 *         undoes exactly its units. Never above a full bucket or before now, SET ... KEEPTTL (the
 *         time to full only shrinks), a missing (full) state stays missing. How each bucket does
 *         both: its module.
 * Faults: a missing state the view says is not yet full was forgotten by Redis (a restart empty,
 *         FLUSHALL, a failover to a replica that lagged): it is rebuilt from the view, refilled to
 *         now, so the grants out stay counted; then the charge is taken whatever is left. A reset
 *         writes a full state kept until every view taken before it reads full, so no node
 *         rebuilds what was reset.
 */
export const LEASE_LUA = `
local policies, ops = ARGV[1], ARGV[2]
${nowFromArgv(3)}
${TOKEN_BUCKET.functions}
${GCRA.functions}
${CEIL_MS_LUA}
${TOKEN_BUCKET.leaseFunctions}
${GCRA.leaseFunctions}
local function grantOf(available, burst, want, whole)
  if whole then
    if available >= want then return want end
    return 0
  end
  local most = available
  if available < 0.1 * burst then most = math.floor(available / 2) end
  if most < want then return math.max(0, most) end
  return want
end

local reply = { struct.pack('<d', now) }
for i = 1, #KEYS do
  local code, limit, window, burst = ${policyLua('i', LEASE_FIELDS, 'policies', LEASE_POLICY_BYTES)}
  local amount, charge, mode, hasView, viewA, viewB = struct.unpack('<dddddd', ops, ${8 * LEASE_OP_DOUBLES} * i - ${8 * LEASE_OP_DOUBLES - 1})
  local whole = mode == ${LEASE_MODE.whole}
  local key = KEYS[i]
  local state = redis.call('GET', key)
  local granted, a, b = 0, 0, 0
  if code == ${TOKEN_BUCKET.code} then
    if mode == ${LEASE_MODE.reset} then
${TOKEN_BUCKET.reset}
    end
${TOKEN_BUCKET.lease}
  else
    if mode == ${LEASE_MODE.reset} then
${GCRA.reset}
    end
${GCRA.lease}
  end
  reply[i + 1] = struct.pack('<ddd', granted, a, b)
end
return table.concat(reply)
`
