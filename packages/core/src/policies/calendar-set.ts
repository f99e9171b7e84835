import { anchorFor, periodBounds } from './calendar.js'
import { type Policy, type PolicySet, policySetOf } from './policy.js'

/** A resolved set and the span of time over which it stays the right one. */
interface Resolved {
  readonly set: PolicySet
  readonly from: number
  readonly until: number
}

/**
 * For a set with calendar periods, a function giving the set a request at `now` for `key` is
 * decided on: each calendar policy becomes the fixed window of the period holding `now` (its
 * length the period's, its `offset` where the period starts, its id naming the start, so a new
 * period starts from a new state). Resolved sets are kept per anchor while their periods last,
 * so a store sees one set object per period (and caches its plan). Undefined for a set without.
 */
export function calendarResolver(set: PolicySet): ((key: string, now: number) => PolicySet) | undefined {
  if (!set.policies.some((policy) => policy.calendar !== undefined)) return undefined
  const resolved = new Map<string, Resolved>()
  return (key, now) => {
    const anchors = set.policies.map((policy) => (policy.calendar ? anchorFor(policy.calendar, key) : undefined))
    const slot = JSON.stringify(anchors)
    const known = resolved.get(slot)
    if (known !== undefined && now >= known.from && now < known.until) return known.set
    let from = Number.NEGATIVE_INFINITY
    let until = Number.POSITIVE_INFINITY
    const policies = set.policies.map((policy, i): Policy => {
      const { calendar } = policy
      if (calendar === undefined) return policy
      const { start, end } = periodBounds(now, calendar.period, calendar.timeZone, anchors[i])
      from = Math.max(from, start)
      until = Math.min(until, end)
      const window = end - start
      return Object.freeze({ ...policy, window, offset: start % window, id: `${policy.id}@${start}` })
    })
    const next = { set: policySetOf(policies), from, until }
    resolved.set(slot, next)
    return next.set
  }
}
