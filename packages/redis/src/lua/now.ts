/**
 * Lua that sets `now` (epoch ms): the value in ARGV[index] when given (tests inject a clock),
 * else the server's TIME, so every process decides on one clock.
 */
export function nowFromArgv(index: number): string {
  return `local now = ARGV[${index}]
if now then
  now = tonumber(now)
else
  local time = redis.call('TIME')
  now = time[1] * 1000 + math.floor(time[2] / 1000)
end`
}
