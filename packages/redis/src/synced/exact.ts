import type { Policy, PolicySet } from '@sluice/core'
import { evaluate, type Outcome } from '@sluice/core/store'
import { run, type ScriptClient, script } from '../client.js'
import { EXACT_LUA, type ExactPolicy, exactCall, readExact, TAKE_BACK_LUA } from '../lua/sync.js'
import type { SyncClock } from './clock.js'
import type { SubWindow } from './counters.js'
import { type Entry, markDenied, statesOf } from './entries.js'
import { withTimeout } from './timeout.js'

const EXACT = script(EXACT_LUA)
const TAKE_BACK = script(TAKE_BACK_LUA)
/** How long an exact decision may wait for Redis before this node decides alone. */
export const EXACT_TIMEOUT_MS = 250

/**
 * Keys near their limit, decided per request by a script on the same hashes the syncs write,
 * with the take-backs of admissions whose replies came too late.
 */
export class ExactPath {
  /** Exact calls answered as denied on their timeout whose replies are still due. */
  readonly #late = new Set<Promise<void>>()

  constructor(
    readonly client: ScriptClient,
    readonly nodeId: string,
    readonly clock: SyncClock,
    readonly interval: number,
  ) {}

  /** One EXACT_LUA call; a reply later than EXACT_TIMEOUT_MS or an error is a denial. Never rejects. */
  async decide(entry: Entry, set: PolicySet, cost: number, now: number): Promise<readonly Outcome[]> {
    const windows: SubWindow[] = []
    const policies: ExactPolicy[] = entry.counters.map((counters, p) => {
      const { span, depth } = counters.geometry
      const current = counters.currentStart(now)
      const own: SubWindow[] = []
      for (let i = depth - 1; i >= 0; i--) own.push(counters.at(current - i * span))
      windows.push(...own)
      return {
        // The limit the request is decided with: the set's (counters of a named policy serve every plan's set).
        limit: (set.policies[p] as Policy).limit,
        weight: (current + span - now) / span,
        keep: counters.keepFor(counters.at(current), now),
        incarnation: counters.incarnation,
        windows: own,
      }
    })
    const { keys, args } = exactCall(this.nodeId, cost, this.clock.deadline(now, EXACT_TIMEOUT_MS), policies)
    const sent = windows.map((w) => w.admitted)
    const sentExact = windows.map((w) => w.exact)
    const sentRefunded = windows.map((w) => w.refunded)
    // What the counts say as sent: the answer if the key is forgotten while the call is out.
    const prior = evaluate(statesOf(entry, now, false), now, set, cost)
    const call = run(this.client, EXACT, keys, args) as Promise<number[]>
    let reply: number[] | undefined
    try {
      reply = await withTimeout(call, EXACT_TIMEOUT_MS)
    } catch {
      this.#takeBackIfAdmitted(call, entry, now, cost)
    }
    const decided = reply === undefined ? undefined : readExact(reply)
    // Forgotten while the call was out (its rows may be another key's now): Redis's answer stands, on the counts as sent.
    if (entry.counters.some((counters) => counters.stale)) {
      if (decided?.admitted !== true) return prior.outcomes.map(deniedAnyway)
      return prior.allowed ? prior.outcomes : prior.outcomes.map(admittedAnyway)
    }
    if (decided === undefined) {
      // Slow or failing Redis on a key near its limit: deny (the safe side). Once syncs fail too,
      // the node is degraded and decides alone on its share without asking. Not marked denied:
      // the key was not found full, and other nodes would then send its every request to a slow Redis.
      return evaluate(statesOf(entry, now, false), now, set, cost).outcomes.map(deniedAnyway)
    }
    const { admitted, globals } = decided
    // This node's part of the reply: what it sent, and its exact admissions so far (one in flight may be missing).
    for (const [i, w] of windows.entries()) {
      // Dropped while the call was out (past its estimate, Redis had it): nothing here to record.
      if (w.stale) continue
      w.acknowledge(sent[i] as number, sentRefunded[i] as number, sentExact[i] as number, false)
      w.heard(globals[i] as number, w.sentAdmitted - w.sentRefunded + w.exact, false, now, this.interval)
    }
    for (const counters of entry.counters) counters.heard = true
    const before = evaluate(statesOf(entry, now, false), now, set, cost)
    if (admitted) {
      for (const counters of entry.counters) counters.at(counters.currentStart(now)).countExact(cost)
      return before.allowed ? before.outcomes : before.outcomes.map(admittedAnyway)
    }
    markDenied(entry, now, before.outcomes)
    for (const counters of entry.counters) counters.at(counters.currentStart(now)).deny(true)
    return before.allowed ? before.outcomes.map(deniedAnyway) : before.outcomes
  }

  /** Settles once every late reply has been taken back or found denied (at most `ms`). */
  async settle(ms: number): Promise<void> {
    await withTimeout(Promise.all(this.#late), ms).catch(() => undefined)
  }

  /**
   * A script that ran after its deadline counted nothing; one that ran in time but whose reply came
   * after the timeout (a busy event loop, the offset's error) may have admitted a call the caller
   * was told no. Then this node takes its `x:` back in Redis at once (one small script), so Redis
   * counts only what callers were told was admitted. `close()` waits for these replies.
   */
  #takeBackIfAdmitted(call: Promise<number[]>, entry: Entry, now: number, cost: number): void {
    const keys = entry.counters.map((counters) => counters.keyAt(counters.currentStart(now)))
    const incarnations = entry.counters.map((counters) => counters.incarnation)
    const late: Promise<void> = call
      .then(async (reply) => {
        if (readExact(reply)?.admitted) await run(this.client, TAKE_BACK, keys, [this.nodeId, cost, ...incarnations])
      })
      .catch(() => undefined)
      .finally(() => this.#late.delete(late))
    this.#late.add(late)
  }
}

function admittedAnyway(o: Outcome): Outcome {
  return { allowed: true, remaining: 0, resetAfter: o.resetAfter, retryAfter: 0, delay: 0 }
}

export function deniedAnyway(o: Outcome): Outcome {
  return { allowed: false, remaining: 0, resetAfter: o.resetAfter, retryAfter: Math.max(1, o.resetAfter), delay: 0 }
}
