import type { ObserveEvent } from '@sluice/core'

/** Allowed and denied decisions of one second, by the binding policy's name. */
export type Second = { readonly at: number; readonly counts: Record<string, { allowed: number; denied: number }> }

/**
 * The live page's feed: counts decisions per policy as they happen (an `observe` function) and
 * sends each finished second to every listener (the page's EventSource).
 */
export function liveFeed() {
  let current: Second['counts'] = {}
  const listeners = new Set<(second: Second) => void>()
  const timer = setInterval(() => {
    const second = { at: Date.now(), counts: current }
    current = {}
    for (const listener of listeners) listener(second)
  }, 1000)
  timer.unref()
  return {
    observe(event: ObserveEvent): void {
      if (event.type !== 'decision') return
      const name = event.decision.binding.name
      const entry = current[name] ?? { allowed: 0, denied: 0 }
      current[name] = entry
      if (event.decision.allowed) entry.allowed++
      else entry.denied++
    },
    listen(listener: (second: Second) => void): () => void {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}
