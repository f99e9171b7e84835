/**
 * Which nodes are alive: one sorted set of node ids scored by the server time of their last
 * heartbeat. A node that stopped beating for `ttl` ms drops out, so the share each node enforces
 * while Redis is unreachable (limit ÷ live nodes) follows the fleet as it grows and shrinks.
 *
 * The epoch key holds the server time it was made at, without expiry: a node that sees it change
 * knows Redis lost its keys (restarted empty, flushed) and sends every live window again.
 *
 * SyncedStore's nodes also share which keys are hot (near their limit) through it, so a node
 * deciding a key it has never counted knows to take the key's global count first: KEYS[3] holds
 * each hot key's member scored by when it stops being hot (what expired goes, 256 a beat), KEYS[4]
 * the same members scored by the server time they were first announced, read from where this node
 * read last (inclusive: a member added in the same millisecond as the last read is read again,
 * never missed). A member is `<end>:<policy id>\0<key>`, its end on the nodes' window clock:
 * every node computes the same end for one window, so two nodes announcing one hot key add one
 * member; Redis keeps it for the milliseconds left until then, on its own clock.
 *
 * KEYS[1]: the set; KEYS[2]: the epoch key; KEYS[3], KEYS[4] (SyncedStore only): the hot keys by
 * end and by announcement. ARGV[1]: this node's id; ARGV[2]: ttl in ms; ARGV[3]: '1' when leaving;
 * with KEYS[3]: ARGV[4] the announcement time read from (0: all), then a member and the
 * milliseconds left until its end per key this node found hot. Reply: how many nodes are alive (this one included
 * unless leaving), the epoch, and the server's TIME (seconds, microseconds); with KEYS[3], then the
 * members announced since ARGV[4] with their announcement times (1000 at most), flat.
 */
/** The members of the hot keys' set by announcement (`announced`) since `since`, with their times, 1000 at most. */
const hotSince = (announced: string, since: string): string =>
  `redis.call('ZRANGEBYSCORE', ${announced}, ${since}, '+inf', 'WITHSCORES', 'LIMIT', 0, 1000)`

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
local reply = { redis.call('ZCARD', KEYS[1]), epoch, tonumber(time[1]), tonumber(time[2]) }
if #KEYS > 2 then
  local hot, announced = KEYS[3], KEYS[4]
  local gone = redis.call('ZRANGEBYSCORE', hot, '-inf', now, 'LIMIT', 0, 256)
  if #gone > 0 then
    redis.call('ZREM', hot, unpack(gone))
    redis.call('ZREM', announced, unpack(gone))
  end
  local latest = 0
  for i = 5, #ARGV, 2 do
    local ends = now + tonumber(ARGV[i + 1])
    if ends > now and redis.call('ZADD', hot, 'NX', ends, ARGV[i]) == 1 then
      redis.call('ZADD', announced, now, ARGV[i])
      if ends > latest then latest = ends end
    end
  end
  -- Both sets live as long as their latest member (a fleet that stops leaves nothing behind).
  if latest > 0 and latest - now > redis.call('PTTL', hot) then
    redis.call('PEXPIREAT', hot, latest)
    redis.call('PEXPIREAT', announced, latest)
  end
  reply[5] = ${hotSince('announced', 'ARGV[4]')}
end
return reply
`

/**
 * The hot keys announced since a time, without a heartbeat: what a node reads before deciding a key
 * it has not heard of when its last read is stale (see `HotKeys`). KEYS[1]: the hot keys by
 * announcement (HEARTBEAT_LUA's KEYS[4]); ARGV[1]: the announcement time read from. Reply: as
 * HEARTBEAT_LUA's hot part.
 */
export const HOT_READ_LUA = `return ${hotSince('KEYS[1]', 'ARGV[1]')}`
