import { EPSILON_LUA } from '../protocol.js'

/**
 * Mirrors packages/core/src/algorithms/warm-up.ts (maxColdOf, cooled, coldCost, unitsWithin,
 * decideWarm) line for line: Guava's SmoothWarmingUp geometry the warming token bucket and GCRA
 * share (token-bucket.ts, gcra.ts), as functions of the policy's numbers.
 */
export const WARM_UP = {
  /** What every script with a warming policy's fragments calls: put before the algorithms' functions. */
  functions: `
local function maxColdOf(limit, window, warmup, coldFactor)
  local interval = window / limit
  return (0.5 * warmup) / interval + (2 * warmup) / (interval * (1 + coldFactor))
end
local function cooled(cold, idle, limit, window, warmup, coldFactor)
  if idle <= 0 then return cold end
  local maxCold = maxColdOf(limit, window, warmup, coldFactor)
  return math.min(maxCold, cold + (idle * maxCold) / warmup)
end
local function coldCost(cold, cost, limit, window, warmup, coldFactor)
  local interval = window / limit
  local threshold = (0.5 * warmup) / interval
  local slope = ((coldFactor - 1) * interval) / (maxColdOf(limit, window, warmup, coldFactor) - threshold)
  local above = math.max(0, cold - threshold)
  local taken = math.min(cost, above)
  local top = interval + above * slope
  return (taken * (top + (top - taken * slope))) / 2 + (cost - taken) * interval
end
`,
  /** What the decision calls: after ceilMs and floorUnits (protocol.ts). */
  decideFunctions: `
local function unitsWithin(cold, budget, limit, window, warmup, coldFactor)
  if budget <= 0 then return 0 end
  local interval = window / limit
  local threshold = (0.5 * warmup) / interval
  local slope = ((coldFactor - 1) * interval) / (maxColdOf(limit, window, warmup, coldFactor) - threshold)
  local above = math.max(0, cold - threshold)
  local top = interval + above * slope
  local aboveCost = (above * (top + interval)) / 2
  if budget >= aboveCost then return floorUnits(above + (budget - aboveCost) / interval) end
  return floorUnits((top - math.sqrt(top * top - 2 * slope * budget)) / slope)
end
-- As core's decideWarm: allowed, remaining, resetAfter, retryAfter (admitted: nextAfter, 0 when
-- something remains), delay.
local function decideWarm(backlog, cold, c, limit, window, burst, maxDelay, warmup, coldFactor)
  local interval = window / limit
  local tolerance = interval * burst
  local maxCold = maxColdOf(limit, window, warmup, coldFactor)
  local nextBacklog = backlog + coldCost(cold, c, limit, window, warmup, coldFactor)
  local fits = interval * c <= tolerance + maxDelay + ${EPSILON_LUA}
  if nextBacklog > tolerance + maxDelay + ${EPSILON_LUA} and not (backlog <= ${EPSILON_LUA} and fits) then
    local wait = nextBacklog - tolerance - maxDelay
    if fits then wait = math.min(wait, backlog) end
    return false, unitsWithin(cold, tolerance - backlog, limit, window, warmup, coldFactor),
      ceilMs(backlog + ((maxCold - cold) * warmup) / maxCold), math.max(ceilMs(wait), 1), 0
  end
  local left = cold - math.min(c, cold)
  local remaining = unitsWithin(left, tolerance - nextBacklog, limit, window, warmup, coldFactor)
  local nextAfter = 0
  if remaining == 0 then
    nextAfter = math.max(1, ceilMs(math.min(nextBacklog + coldCost(left, 1, limit, window, warmup, coldFactor) - tolerance, nextBacklog)))
  end
  return true, remaining, ceilMs(nextBacklog + ((maxCold - left) * warmup) / maxCold), nextAfter,
    ceilMs(math.min(nextBacklog - tolerance, maxDelay))
end
`,
} as const

/**
 * Lua that makes the warming fragments' functions, once a script call meets a warming policy (in
 * the `if` of the warm codes): the table `warm` (a local each script declares, nil until then)
 * holds them. A function expression makes its closure only where it runs, so a call with no
 * warming policy makes none and pays one nil upvalue: Redis runs a script's whole body on every
 * call (the log's functions are made on first use for the same reason, sliding-log.ts). `decide`:
 * with the decision's functions (which call ceilMs and floorUnits). `bucketFunctions` are
 * WARM_TOKEN_BUCKET's and WARM_GCRA's `functions`.
 */
export function makeWarmLua(bucketFunctions: string, decide: boolean): string {
  const names = ['maxColdOf', 'cooled', 'coldCost', 'bucketCold', 'takeBucket', 'warmBacklogOf', 'gcraCold']
  if (decide) names.push('decideWarm')
  return `
    if not warm then
      warm = (function()
${WARM_UP.functions}${decide ? WARM_UP.decideFunctions : ''}${bucketFunctions}
        return { ${names.map((name) => `${name} = ${name}`).join(', ')} }
      end)()
    end
`
}
