/**
 * Which keys the fleet found hot (their count in a window at WATCH_FROM of `exactAbove` of the
 * limit or more, or denied), shared through the heartbeat (HEARTBEAT_LUA): a node that finds a key
 * hot at a sync announces it with its next heartbeat, and every node reads the announcements at
 * each of its own. A node deciding a key it has no count for (never counted here, or forgotten)
 * decides it exactly when the key is hot, so it does not admit on a count of 0 what another node
 * has already spent; a cool key's first decision stays local. A heartbeat is a second apart, so
 * such a decision first reads what was announced since (HOT_READ_LUA) when the last read is older
 * than an interval (`stale`). One map entry per hot key, gone when its window ends.
 */
export class HotKeys {
  /** Policy id, then key: window time at which it stops being hot. */
  readonly #ends = new Map<string, Map<string, number>>()
  /** Members to announce at the next heartbeat, with their ends. */
  #pending: (string | number)[] = []
  /** The announcement time (Redis's clock) read up to, inclusive. */
  #since = 0
  /** Local time the last read was sent (heartbeat or HOT_READ_LUA; a read that failed counts: it is not retried at once). */
  #readAt = Number.NEGATIVE_INFINITY

  /** The announcement time to read from. */
  get since(): number {
    return this.#since
  }

  /** Whether the last read was sent more than `bound` ms before local time `local`. */
  stale(local: number, bound: number): boolean {
    return local - this.#readAt > bound
  }

  /** A read sent at local time `local` was answered (`heard`) or failed. */
  read(local: number): void {
    this.#readAt = Math.max(this.#readAt, local)
  }

  /** Whether `key` under policy `id` is hot at window time `now`. */
  has(id: string, key: string, now: number): boolean {
    const ends = this.#ends.get(id)?.get(key)
    return ends !== undefined && ends > now
  }

  /** Some hot key is known: a decision on a key not yet counted looks it up. */
  get any(): boolean {
    return this.#ends.size > 0
  }

  /** Found hot here at window time `now` until `ends`: the next heartbeat announces it, unless already known. */
  announce(id: string, key: string, now: number, ends: number): void {
    if ((this.#ends.get(id)?.get(key) ?? Number.NEGATIVE_INFINITY) >= ends) return
    this.#add(id, key, ends)
    this.#pending.push(`${ends}:${id}\0${key}`, Math.ceil(ends - now))
  }

  /** Announcements wait for a heartbeat. */
  get pending(): boolean {
    return this.#pending.length > 0
  }

  /** HEARTBEAT_LUA's hot arguments (from ARGV[4]); what they announce is no longer pending. */
  takeArgs(): (string | number)[] {
    const args = [this.#since, ...this.#pending]
    this.#pending = []
    return args
  }

  /** A heartbeat failed: its announcements go with the next. */
  restore(args: readonly (string | number)[]): void {
    this.#pending.push(...args.slice(1))
  }

  /** HEARTBEAT_LUA's hot reply: members and announcement times, flat; drops what ended by `now`. */
  heard(flat: readonly (string | number)[], now: number): void {
    for (let i = 0; i < flat.length; i += 2) {
      const member = String(flat[i])
      const colon = member.indexOf(':')
      const nul = member.indexOf('\0', colon)
      if (colon < 0 || nul < 0) continue
      const ends = Number(member.slice(0, colon))
      if (ends > now) this.#add(member.slice(colon + 1, nul), member.slice(nul + 1), ends)
      this.#since = Math.max(this.#since, Number(flat[i + 1]))
    }
    for (const [id, byKey] of this.#ends) {
      for (const [key, ends] of byKey) if (ends <= now) byKey.delete(key)
      if (byKey.size === 0) this.#ends.delete(id)
    }
  }

  #add(id: string, key: string, ends: number): void {
    let byKey = this.#ends.get(id)
    if (byKey === undefined) {
      byKey = new Map()
      this.#ends.set(id, byKey)
    }
    if ((byKey.get(key) ?? Number.NEGATIVE_INFINITY) < ends) byKey.set(key, ends)
  }
}
