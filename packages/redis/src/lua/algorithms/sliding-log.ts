import { ALGORITHM_CODES, EXPIRY_SLACK_MS } from '../protocol.js'

/**
 * Mirrors packages/core/src/algorithms/sliding-log.ts. The sliding log's state on Redis and the
 * Lua functions every script shares to read and change it (SLIDING_LOG below). Each mirrors
 * @sluice/core's sliding log (decideSlidingLog, appended, refundSlidingLog) on a layout that lets a
 * decision touch a constant number of bytes whatever the log holds, where a string read and
 * rewritten whole made a log of 5 000 entries cost Redis seven times one of 10 (bench/README).
 *
 * Layout: one string, `count` records of 16 bytes then a trailer of 64 bytes, little-endian doubles.
 *   record i (0-based, at byte 16 i): time, cum: the cost admitted from the log's start through
 *     this entry. Cumulative costs make the cost between two entries one subtraction, so finding
 *     how many of the oldest entries must leave to free a cost is a search, not a sum.
 *   trailer (at byte 16 count): count, size, head, base, oldest, newest, total, blockedUntil.
 *     Records from `head` to `size` − 1 are the log (older ones may have left the window since
 *     it was written); those before `head` have left; those from `size` on are left over from a
 *     refund and are overwritten by the next append. `base` is the cum before `head`, `oldest`
 *     and `newest` the times of records head and size − 1, `total` the cum of record size − 1,
 *     `blockedUntil` a blockFor policy's block (0 without).
 * Read: GETRANGE of the last 64 bytes (the trailer: used, newest and whether any entry leaves),
 *   then, only when entries leave or a denial needs the time they leave, one GETRANGE of up to
 *   LOG_CHUNK records from the oldest, and a binary search of one record per probe past them.
 * Functions: made by logFunctions() on the first call that needs them (see below).
 * Write: SETRANGE of the new record and trailer together (a request in the millisecond of the
 *   newest entry adds its cost to that entry, as core merges them), PEXPIRE; a log whose entries
 *   have all left is written afresh (PSETEX), and once at least half of the records have left
 *   (and at least LOG_COMPACT_AT), the live ones are moved to the start (amortised O(1)).
 * Times: a record is never stored later than the request's now: after the clock stepped back,
 *   entries stamped later than now are restamped now when the log is next appended to, and a log
 *   whose newest entry is more than a window after now reads as no log (as core's).
 */
const LOG_FUNCTIONS = `
local LOG_TRAILER = 64
-- Records read in one GETRANGE before a binary search takes over (256 bytes).
local LOG_CHUNK = 16
-- Records that must have left before the live ones are moved down (and at least half).
local LOG_COMPACT_AT = 32

local logTrailer, logRead, logField, logSearch, logLive, logReaches, logWrite, logAppend, logBlock, decideLog, logRefund
-- Made on first use (logFunctions()): Redis runs a script's whole body on every call, and making
-- these functions there cost 0.8 µs a call (EVALSHA usec, fastest of 9 interleaved rounds of 5 000
-- calls: 2.02 against 1.21 for the same script without them), a tenth of a one-decision call
-- that has no sliding log to pay for.
local function logFunctions()
  if logRead then return end
  logTrailer = function(count, size, head, base, oldest, newest, total, blockedUntil)
    return struct.pack('<dddddddd', count, size, head, base, oldest, newest, total, blockedUntil)
  end

  -- The log at \`key\` as its trailer says: a table the functions below read and cache into.
  logRead = function(key)
    local t = redis.call('GETRANGE', key, -LOG_TRAILER, -1)
    if #t < LOG_TRAILER then
      return { key = key, missing = true, count = 0, size = 0, head = 0, base = 0, oldest = 0, newest = 0, total = 0, blockedUntil = 0 }
    end
    local count, size, head, base, oldest, newest, total, blockedUntil = struct.unpack('<dddddddd', t)
    return { key = key, count = count, size = size, head = head, base = base, oldest = oldest, newest = newest, total = total, blockedUntil = blockedUntil }
  end

  -- Field f (1: time, 2: cum) of record i, from the chunk last read when it holds it.
  logField = function(v, i, f)
    local from = v.chunkFrom
    if from and i >= from and i < from + v.chunkLength then
      return (struct.unpack('<d', v.chunk, 16 * (i - from) + 8 * f - 7))
    end
    return (struct.unpack('<d', redis.call('GETRANGE', v.key, 16 * i + 8 * f - 8, 16 * i + 8 * f - 1)))
  end

  -- The first record in [lo, hi) whose field f is above \`target\` (or equal to it, with orEqual), or
  -- hi; fields never decrease along the log. The records of the chunk last read first, else the
  -- first LOG_CHUNK records in one read (kept for logField), then a binary search.
  logSearch = function(v, lo, hi, f, target, orEqual)
    local from = v.chunkFrom
    if from and lo >= from and lo < from + v.chunkLength then
      local chunk, last = v.chunk, math.min(hi, from + v.chunkLength)
      for i = lo, last - 1 do
        local x = struct.unpack('<d', chunk, 16 * (i - from) + 8 * f - 7)
        if x > target or (orEqual and x == target) then return i end
      end
      lo = last
    end
    local n = math.min(LOG_CHUNK, hi - lo)
    if n > 0 then
      local chunk = redis.call('GETRANGE', v.key, 16 * lo, 16 * (lo + n) - 1)
      v.chunk, v.chunkFrom, v.chunkLength = chunk, lo, n
      for j = 0, n - 1 do
        local x = struct.unpack('<d', chunk, 16 * j + 8 * f - 7)
        if x > target or (orEqual and x == target) then return lo + j end
      end
    end
    lo = lo + n
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local x = logField(v, mid, f)
      if x > target or (orEqual and x == target) then hi = mid else lo = mid + 1 end
    end
    return lo
  end

  -- The log inside the window at now: v.h (first live record), v.b (cum before it), v.o (its time),
  -- v.used, v.last (the newest live time, or nil). Computed once per view and window.
  logLive = function(v, now, window)
    local expired = now - window
    if v.liveAt == expired then return end
    v.liveAt = expired
    local h, b, o = v.head, v.base, v.oldest
    -- A newest entry more than a window after now (a clock that stepped back) reads as no log, as
    -- core's ahead(): such a step costs at most about a window.
    local stepped = v.newest - now > window
    if h < v.size and (o <= expired or stepped) then
      if v.newest <= expired or stepped then
        h, b = v.size, v.total
      else
        h = logSearch(v, h, v.size, 1, expired, false)
        b, o = logField(v, h - 1, 2), logField(v, h, 1)
      end
    end
    v.h, v.b, v.o = h, b, o
    if h < v.size then v.used, v.last = v.total - b, v.newest else v.used, v.last = 0, nil end
  end

  -- The time of the live record where the cost from the oldest live one reaches \`need\` (> 0),
  -- or nil when the log holds less.
  logReaches = function(v, need)
    local i = logSearch(v, v.h, v.size, 2, v.b + need, true)
    if i < v.size then return logField(v, i, 1) end
    return nil
  end

  -- A write: { offset, bytes [, offset, bytes], ttl = ms } (SETRANGE each, then PEXPIRE unless
  -- ttl is nil) or { whole = bytes, ttl = ms } (PSETEX).
  logWrite = function(key, w)
    if w.whole then
      redis.call('PSETEX', key, string.format('%d', w.ttl), w.whole)
      return
    end
    redis.call('SETRANGE', key, string.format('%d', w[1]), w[2])
    if w[3] then redis.call('SETRANGE', key, string.format('%d', w[3]), w[4]) end
    if w.ttl then redis.call('PEXPIRE', key, string.format('%d', w.ttl)) end
  end

  -- The write that appends cost c at now to the live log (after logLive), as core's appended: a
  -- log with nothing live starts afresh, an entry at now takes the cost.
  logAppend = function(v, now, c, ttl)
    local h, b, size, count = v.h, v.b, v.size, v.count
    if h >= size then
      return { whole = struct.pack('<dd', now, c) .. logTrailer(1, 1, 0, 0, now, now, c, v.blockedUntil), ttl = ttl }
    end
    local total, oldest = v.total + c, v.o
    if v.newest > now then
      -- The clock stepped back: entries stamped after now are restamped now (never stored in
      -- the future), the newest taking the cost.
      local j = logSearch(v, h, size, 1, now, false)
      local later = redis.call('GETRANGE', v.key, 16 * j, 16 * size - 1)
      local parts = {}
      for r = 0, size - j - 1 do
        local _, cum = struct.unpack('<dd', later, 16 * r + 1)
        parts[r + 1] = struct.pack('<dd', now, cum)
      end
      parts[size - j] = struct.pack('<dd', now, total)
      if j == h then oldest = now end
      return { 16 * j, table.concat(parts), 16 * count, logTrailer(count, size, h, b, oldest, now, total, v.blockedUntil), ttl = ttl }
    end
    local merge = v.newest == now
    if h >= LOG_COMPACT_AT and 2 * h >= size then
      -- Half the records have left: the live ones move to the start, in one write.
      local live = redis.call('GETRANGE', v.key, 16 * h, 16 * size - 1)
      local n = size - h
      if merge then
        live = string.sub(live, 1, -9) .. struct.pack('<d', total)
      else
        live = live .. struct.pack('<dd', now, total)
        n = n + 1
      end
      return { whole = live .. logTrailer(n, n, 0, b, oldest, now, total, v.blockedUntil), ttl = ttl }
    end
    if merge then
      if size == count then
        return { 16 * size - 8, struct.pack('<d', total) .. logTrailer(count, size, h, b, oldest, now, total, v.blockedUntil), ttl = ttl }
      end
      return { 16 * size - 8, struct.pack('<d', total), 16 * count, logTrailer(count, size, h, b, oldest, now, total, v.blockedUntil), ttl = ttl }
    end
    if size == count then
      return { 16 * count, struct.pack('<dd', now, total) .. logTrailer(count + 1, size + 1, h, b, oldest, now, total, v.blockedUntil), ttl = ttl }
    end
    return { 16 * size, struct.pack('<dd', now, total), 16 * count, logTrailer(count, size + 1, h, b, oldest, now, total, v.blockedUntil), ttl = ttl }
  end

  -- The write that sets the block of log v (its other fields as they are).
  logBlock = function(v, blockedUntil, ttl)
    if v.missing then return { whole = logTrailer(0, 0, 0, 0, 0, 0, 0, blockedUntil), ttl = ttl } end
    return { 16 * v.count + 56, struct.pack('<d', blockedUntil), ttl = ttl }
  end

  -- As core's decideSlidingLog on log v at now, cost c (0: what is left), for a policy of
  -- \`limit\` per \`window\` ms: allowed, remaining, resetAfter, retryAfter, delay, and when admitted
  -- with c > 0 the write (see logWrite). With blockFor, as core's blocking(): a denial of c > 0
  -- starts a block, written although denied (the eighth value says so).
  decideLog = function(v, now, c, limit, window, blockFor, slack)
    logLive(v, now, window)
    local used, last = v.used, v.last
    if blockFor > 0 and v.blockedUntil > now then
      local quotaReset = 0
      if last then quotaReset = last + window - now end
      return false, 0, math.max(v.blockedUntil - now, quotaReset), v.blockedUntil - now, 0
    end
    if used + c > limit then
      -- The excess leaves with the oldest entries: when the one where it is reached leaves.
      local leaves = logReaches(v, used + c - limit)
      if leaves then leaves = leaves + window - now else leaves = window end
      local resetAfter = 0
      if last then resetAfter = last + window - now end
      if c > 0 and blockFor > 0 then
        local blocked = math.max(resetAfter, blockFor)
        return false, 0, blocked, math.max(leaves, blockFor), 0, logBlock(v, now + blockFor, blocked + slack), true, true
      end
      return false, math.max(0, limit - used), resetAfter, math.max(leaves, 1), 0
    end
    -- With nothing left after this request: when the oldest entries free one unit (the request's
    -- own entry, at now, when the log holds none).
    local nextAfter = 0
    if used + c == limit then nextAfter = math.max(1, (logReaches(v, 1) or now) + window - now) end
    if c == 0 then
      local resetAfter = 0
      if last then resetAfter = last + window - now end
      return true, limit - used, resetAfter, nextAfter, 0
    end
    return true, limit - used - c, window, nextAfter, 0, logAppend(v, now, c, window + slack), true
  end

  -- As core's refundSlidingLog on log v (a key that exists): gives back cost c from the newest
  -- entries, or with \`admitted\` (a time) only from the newest entry at or before it; the write
  -- (SETRANGE, keeping the expiry), or nil when nothing changes.
  logRefund = function(v, now, c, window, admitted)
    logLive(v, now, window)
    local h, b, size, count = v.h, v.b, v.size, v.count
    if h >= size then return nil end
    if admitted then
      local k = logSearch(v, h, size, 1, admitted, false) - 1
      if k < h then return nil end
      local before = b
      if k > h then before = logField(v, k - 1, 2) end
      local time, cum = logField(v, k, 1), logField(v, k, 2)
      local taken = math.min(c, cum - before)
      -- The entries after it lose its refunded cost from their cums; an entry left with nothing
      -- is removed (they move down over it).
      local parts = {}
      if cum - taken > before then parts[1] = struct.pack('<dd', time, cum - taken) end
      if k + 1 < size then
        local later = redis.call('GETRANGE', v.key, 16 * k + 16, 16 * size - 1)
        for r = 0, size - k - 2 do
          local t, s = struct.unpack('<dd', later, 16 * r + 1)
          parts[#parts + 1] = struct.pack('<dd', t, s - taken)
        end
      end
      local n = k + #parts
      local oldest, newest = v.o, v.newest
      if n <= h then
        -- Nothing is left.
        return { 16 * count, logTrailer(count, h, h, b, 0, 0, b, v.blockedUntil) }
      end
      if k == h then oldest = struct.unpack('<d', parts[1]) end
      if k == size - 1 and #parts == 0 then newest = logField(v, k - 1, 1) end
      return { 16 * k, table.concat(parts), 16 * count, logTrailer(count, n, h, b, oldest, newest, v.total - taken, v.blockedUntil) }
    end
    local taken = math.min(c, v.used)
    local total = v.total - taken
    if total == b then return { 16 * count, logTrailer(count, h, h, b, 0, 0, b, v.blockedUntil) } end
    -- The newest entries whose cost is wholly given back go; the one where the refund ends keeps
    -- the rest of its cost.
    local k = logSearch(v, h, size, 2, total, true)
    return { 16 * k + 8, struct.pack('<d', total), 16 * count, logTrailer(count, k + 1, h, b, v.o, logField(v, k, 1), total, v.blockedUntil) }
  end
end
`

/**
 * The sliding log's fragments. Unlike the other algorithms' (algorithm.ts), its state is read and
 * written in parts, so refund, penalize and block work on the policy's key `KEYS[i]` (with
 * `window` and the script's `cost`, `admitted`, `duration` in scope), and its block is a field
 * of the log's trailer. `decide` gets the log's view (logRead) as `state`.
 */
export const SLIDING_LOG = {
  code: ALGORITHM_CODES['sliding-log'],
  functions: LOG_FUNCTIONS,
  decide: `return decideLog(state, now, c, limit, window, blockFor, ${EXPIRY_SLACK_MS})`,
  refund: `
    logFunctions()
    local log = logRead(KEYS[i])
    if not log.missing then
      local write = logRefund(log, now, cost, window, admitted)
      if write then logWrite(KEYS[i], write) end
    end
`,
  penalize: `
    logFunctions()
    local log = logRead(KEYS[i])
    logLive(log, now, window)
    logWrite(KEYS[i], logAppend(log, now, cost, math.max(window, log.blockedUntil - now) + ${EXPIRY_SLACK_MS}))
`,
  block: `
    logFunctions()
    local log = logRead(KEYS[i])
    local blockedUntil = math.max(now + duration, log.blockedUntil)
    local expiry = math.max(redis.call('PTTL', KEYS[i]), blockedUntil - now + ${EXPIRY_SLACK_MS})
    logWrite(KEYS[i], logBlock(log, blockedUntil, expiry))
`,
} as const
