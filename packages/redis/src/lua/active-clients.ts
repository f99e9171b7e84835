/**
 * One sync of one node, atomic, no lock. KEYS: the epoch key, a scratch key, then per slot its
 * bits and its version. ARGV: the keys' time to live (ms), then per slot: mode ('-' nothing to
 * send, 'g' new bit positions in ascending order as LEB128 gaps, 'd' the node's whole slot),
 * payload, and the version this node last read ('-1': send the bits whatever).
 *
 * Bits are only ever ORed in (SETBIT-style BITFIELD sets, or BITOP OR), so concurrent syncs
 * commute and none can undo another. The version counts pushes; when it moved only by this
 * node's own push, nobody else added anything and the bits are not sent back.
 *
 * The epoch is the server time when the limiter's keys were (re)created: a node that sees it
 * change knows Redis lost them (a restart, an expiry) and sends its whole window again.
 *
 * Replies: the epoch, then per slot the version and the merged bits (false when unchanged).
 */
export const ACTIVE_CLIENTS_SYNC_LUA = `
local ttl = tonumber(ARGV[1])
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  local t = redis.call('TIME')
  epoch = t[1] .. '.' .. t[2]
  redis.call('SET', KEYS[1], epoch, 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local reply = { epoch }
for i = 1, (#KEYS - 2) / 2 do
  local bits = KEYS[1 + 2 * i]
  local versionKey = KEYS[2 + 2 * i]
  local mode = ARGV[3 * i - 1]
  local payload = ARGV[3 * i]
  local seen = tonumber(ARGV[3 * i + 1])
  local pushed = 0
  if mode == 'd' then
    redis.call('SET', KEYS[2], payload)
    redis.call('BITOP', 'OR', bits, bits, KEYS[2])
    redis.call('DEL', KEYS[2])
    pushed = 1
  elseif mode == 'g' then
    local args = {}
    local n = 0
    local position, gap, scale = -1, 0, 1
    for at = 1, #payload do
      local b = string.byte(payload, at)
      if b >= 128 then
        gap = gap + (b - 128) * scale
        scale = scale * 128
      else
        position = position + 1 + gap + b * scale
        gap, scale = 0, 1
        args[n + 1] = 'SET'
        args[n + 2] = 'u1'
        args[n + 3] = position
        args[n + 4] = 1
        n = n + 4
      end
      if n >= 4000 then
        redis.call('BITFIELD', bits, unpack(args, 1, n))
        n = 0
      end
    end
    if n > 0 then redis.call('BITFIELD', bits, unpack(args, 1, n)) end
    pushed = 1
  end
  local version
  if pushed == 1 then
    version = redis.call('INCR', versionKey)
    redis.call('PEXPIRE', versionKey, ttl)
    redis.call('PEXPIRE', bits, ttl)
  else
    version = tonumber(redis.call('GET', versionKey) or '0')
  end
  reply[#reply + 1] = version
  if version == seen + pushed then
    reply[#reply + 1] = false
  else
    reply[#reply + 1] = redis.call('GET', bits) or ''
  end
end
return reply
`
