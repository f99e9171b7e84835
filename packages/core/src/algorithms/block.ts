import type { Policy } from '../policies/policy.js'
import { denied, type Penalty, type Refund, type Step, type Transition } from './outcome.js'

/**
 * The state of a policy with `blockFor`: the algorithm's own state, and until when the key is
 * blocked (epoch ms; 0 or past when not). Unlike the algorithms' states, a block's end has no
 * horizon from now: a block set by `limiter.block(key, duration)` (`blockUntil`) may rightly end
 * later than `blockFor`, and the stored end does not say which set it, so a clock that steps back
 * lengthens a block by the step (a `blockFor` block at most by the step; capping it at `blockFor`
 * would cut manual blocks short).
 */
export interface BlockState {
  readonly until: number
  readonly inner: unknown
}

/** A denied step whose state must be written all the same: it starts a block. */
export interface BlockingStep<S> extends Step<S> {
  readonly blocks?: boolean
}

/**
 * `transition` with a block: while blocked, every request is denied until the block ends; a
 * request (cost > 0) that the algorithm denies starts a block of `blockFor`. What the algorithm
 * counts is unchanged: a blocked request takes nothing.
 */
export function blocking(transition: Transition<unknown>): Transition<BlockState> {
  return (state, now, policy, cost): BlockingStep<BlockState> => {
    const until = state?.until ?? 0
    const inner = state?.inner
    if (until > now) {
      const quota = transition(inner, now, policy, 0).outcome
      return { state: state as BlockState, outcome: denied(0, Math.max(until - now, quota.resetAfter), until - now) }
    }
    const result = transition(inner, now, policy, cost)
    const { outcome } = result
    if (outcome.allowed) {
      return { state: cost === 0 && state !== undefined ? state : { until, inner: result.state }, outcome }
    }
    if (cost === 0) return { state: state as BlockState, outcome }
    const { blockFor } = policy
    return {
      state: { until: now + blockFor, inner },
      outcome: denied(0, Math.max(outcome.resetAfter, blockFor), Math.max(outcome.retryAfter, blockFor)),
      blocks: true,
    }
  }
}

/** The state blocked until `until` (a later block already there stays), the algorithm's state kept. */
export function blockUntil(state: BlockState | undefined, until: number): BlockState {
  return { until: Math.max(until, state?.until ?? 0), inner: state?.inner }
}

/** The algorithm's refund on the state inside; a block stays. */
export function refundBlocking(refund: Refund<unknown>): Refund<BlockState> {
  return (state, now, policy: Policy, cost, admittedAt) => {
    if (state === undefined || state.inner === undefined) return state
    const inner = refund(state.inner, now, policy, cost, admittedAt)
    return inner === state.inner ? state : { until: state.until, inner }
  }
}

/** A blocking policy's penalty goes to the algorithm's state; a block stays. */
export function penalizeBlocking(penalize: Penalty<unknown>): Penalty<BlockState> {
  return (state, now, policy, cost) => ({ until: state?.until ?? 0, inner: penalize(state?.inner, now, policy, cost) })
}
