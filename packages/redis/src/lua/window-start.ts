/**
 * As core's windowStart (fixed-window): the start of the window holding \`t\`, \`offset\` after a
 * multiple of \`window\` since the epoch (a calendar period's start; 0 for a plain fixed window).
 * Lua's fmod keeps the dividend's sign, so a time before the offset wraps into the window before.
 */
export const WINDOW_START_LUA = `
local function windowStart(t, window, offset)
  local into = math.fmod(t - offset, window)
  if into < 0 then into = into + window end
  return t - into
end
`
