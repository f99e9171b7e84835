/**
 * Which nodes are alive: one sorted set of node ids scored by the server time of their last
 * heartbeat. A node that stopped beating for `ttl` ms drops out, so the share each node enforces
 * while Redis is unreachable (limit ÷ live nodes) follows the fleet as it grows and shrinks.
 *
 * The epoch key holds the server time it was made at, without expiry: a node that sees it change
 * knows Redis lost its keys (restarted empty, flushed) and sends every live window again.
 *
 * KEYS[1]: the set; KEYS[2]: the epoch key. ARGV[1]: this node's id; ARGV[2]: ttl in ms; ARGV[3]:
 * '1' when leaving. Reply: how many nodes are alive (this one included unless leaving), the epoch,
 * and the server's TIME (seconds, microseconds).
 */
export const HEARTBEAT_LUA = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  epoch = time[1] .. '.' .. time[2]
  redis.call('SET', KEYS[2], epoch)
end
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now, ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return { redis.call('ZCARD', KEYS[1]), epoch, tonumber(time[1]), tonumber(time[2]) }
`
