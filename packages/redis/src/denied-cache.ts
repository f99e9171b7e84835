import type { Outcome } from '@sluice/core'

interface Entry {
  /** Local clock when Redis denied the request. */
  readonly at: number
  /** When the denied request could first succeed. */
  readonly until: number
  readonly cost: number
  readonly outcomes: readonly Outcome[]
}

/**
 * Remembers denials until their retryAfter, so a flood from one limited client is answered in
 * this process and never reaches Redis. A request costing at least as much as the denied one
 * cannot succeed sooner under any algorithm, so it gets the same answer with times moved on.
 * Bounded: the oldest entry goes first when full.
 */
export class DeniedCache {
  readonly #entries = new Map<string, Entry>()
  readonly #maxKeys: number

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys
  }

  get size(): number {
    return this.#entries.size
  }

  get(id: string, cost: number, now: number): readonly Outcome[] | undefined {
    const entry = this.#entries.get(id)
    if (entry === undefined) return undefined
    if (now >= entry.until) {
      this.#entries.delete(id)
      return undefined
    }
    if (cost < entry.cost) return undefined
    const elapsed = now - entry.at
    return entry.outcomes.map((o) => ({
      allowed: o.allowed,
      remaining: o.remaining,
      resetAfter: Math.max(0, o.resetAfter - elapsed),
      retryAfter: o.allowed ? 0 : Math.max(1, o.retryAfter - elapsed),
      delay: 0,
    }))
  }

  /** Records a denial (at least one outcome not allowed). */
  set(id: string, cost: number, now: number, outcomes: readonly Outcome[]): void {
    let retryAfter = 0
    for (const o of outcomes) if (!o.allowed && o.retryAfter > retryAfter) retryAfter = o.retryAfter
    this.#entries.delete(id)
    if (this.#entries.size >= this.#maxKeys) {
      const oldest = this.#entries.keys().next()
      if (!oldest.done) this.#entries.delete(oldest.value)
    }
    this.#entries.set(id, { at: now, until: now + retryAfter, cost, outcomes })
  }

  delete(id: string): void {
    this.#entries.delete(id)
  }
}
