/**
 * Requests in flight per key, in this process. `acquire` either takes a slot and returns its
 * release function, which frees the slot on its first call only, or returns `undefined` when
 * the key is at its limit. Keys with nothing in flight are deleted, so memory follows load.
 */
export class InflightSlots {
  readonly #counts = new Map<string, number>()

  constructor(readonly limit: number) {}

  /** Requests in flight for `key` now. */
  count(key: string): number {
    return this.#counts.get(key) ?? 0
  }

  acquire(key: string): (() => void) | undefined {
    const current = this.count(key)
    if (current >= this.limit) return undefined
    this.#counts.set(key, current + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = this.count(key) - 1
      if (left > 0) this.#counts.set(key, left)
      else this.#counts.delete(key)
    }
  }
}
