// The example store of docs/writing-a-store.md, as written there, passes the conformance suite.
import type { PolicySet } from '@sluice/core'
import { type AlgorithmState, evaluate, peekOutcome, refund, type Store } from '@sluice/core/store'
import { storeConformanceCases } from '@sluice/core/testing'
import { describe, it } from 'vitest'

export class MapStore implements Store {
  readonly #states = new Map<string, AlgorithmState>() // key + '\0' + policy.id -> state
  constructor(readonly now: () => number = Date.now) {}

  consume(key: string, set: PolicySet, cost: number) {
    const ids = set.policies.map((p) => `${key}\0${p.id}`)
    const result = evaluate(
      ids.map((id) => this.#states.get(id)),
      Math.floor(this.now()),
      set,
      cost,
    )
    if (result.allowed) for (const [i, id] of ids.entries()) this.#states.set(id, result.states[i])
    return result.outcomes
  }
  peek(key: string, set: PolicySet) {
    return set.policies.map((p) => peekOutcome(this.#states.get(`${key}\0${p.id}`), Math.floor(this.now()), p))
  }
  reset(key: string, set: PolicySet) {
    for (const p of set.policies) this.#states.delete(`${key}\0${p.id}`)
  }
  refund(key: string, set: PolicySet, cost: number) {
    for (const p of set.policies) {
      const id = `${key}\0${p.id}`
      const state = refund(this.#states.get(id), Math.floor(this.now()), p, cost)
      if (state !== undefined) this.#states.set(id, state)
    }
  }
}

describe('docs/writing-a-store.md: MapStore', () => {
  for (const c of storeConformanceCases({ createStore: (now) => new MapStore(now) })) it(c.name, c.run)
})
