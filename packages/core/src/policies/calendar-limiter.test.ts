import { describe, expect, it } from 'vitest'
import { clockedStore } from '../../../../test/support/clock.js'
import { ConfigError } from '../diagnostics/errors.js'
import { createLimiter } from '../limiter/limiter.js'
import { SketchStore } from '../stores/sketch-store.js'
import { parsePolicy } from './policy.js'

const at = (text: string) => Date.parse(text)

describe('calendar periods on a limiter', () => {
  it('counts a month in Berlin, tells the true time to its end, and starts afresh on the 1st', async () => {
    const { clock, store } = clockedStore(at('2026-03-30T10:00:00Z'))
    const limiter = createLimiter({ limits: { limit: 3, period: 'month', timeZone: 'Europe/Berlin' }, store })
    expect((await limiter.consume('k')).remaining).toBe(2)
    await limiter.consume('k')
    const last = await limiter.consume('k')
    expect(last).toMatchObject({ allowed: true, remaining: 0 })
    // March ends at midnight Berlin summer time (+02): 2026-03-31T22:00Z.
    expect(last.resetAfter).toBe(at('2026-03-31T22:00:00Z') - clock.now)
    const denied = await limiter.consume('k')
    expect(denied).toMatchObject({ allowed: false, retryAfter: at('2026-03-31T22:00:00Z') - clock.now })

    clock.now = at('2026-03-31T21:59:59.999Z')
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now = at('2026-03-31T22:00:00Z')
    const april = await limiter.consume('k')
    expect(april).toMatchObject({ allowed: true, remaining: 2 })
    expect(april.resetAfter).toBe(30 * 86_400_000)
  })

  it('anchors each key to its own billing day, a 31st meaning the last day of a shorter month', async () => {
    const { clock, store } = clockedStore(at('2026-02-27T12:00:00Z'))
    const billingDays: Record<string, string> = { alice: '2025-12-31', bob: '2026-01-15' }
    const limiter = createLimiter({
      limits: { limit: 2, period: 'month', anchor: (key) => billingDays[key] ?? '2026-01-01' },
      store,
    })
    await limiter.consume('alice', { cost: 2 })
    await limiter.consume('bob', { cost: 2 })
    expect((await limiter.peek('alice')).resetAfter).toBe(at('2026-02-28T00:00:00Z') - clock.now)
    expect((await limiter.peek('bob')).resetAfter).toBe(at('2026-03-15T00:00:00Z') - clock.now)

    clock.now = at('2026-02-28T00:00:00Z')
    expect((await limiter.consume('alice')).allowed).toBe(true)
    expect((await limiter.consume('bob')).allowed).toBe(false)
  })

  it('a refund of a request admitted last period gives nothing back into this one', async () => {
    const { clock, store } = clockedStore(at('2026-12-31T23:59:59Z'))
    const limiter = createLimiter({ limits: { limit: 5, period: 'year' }, store })
    const admittedAt = limiter.clock()
    await limiter.consume('k', { cost: 5 })
    clock.now = at('2027-01-01T00:00:01Z')
    await limiter.consume('k', { cost: 5 })
    await limiter.refund('k', { cost: 5, admittedAt })
    expect((await limiter.peek('k')).remaining).toBe(0)
    await limiter.refund('k', { cost: 2, admittedAt: limiter.clock() })
    expect((await limiter.peek('k')).remaining).toBe(2)
  })

  it('sits beside a plain window in one set, all-or-nothing', async () => {
    const { clock, store } = clockedStore(at('2026-06-15T12:00:30Z'))
    const limiter = createLimiter({
      limits: [
        { limit: 100, period: 'day', timeZone: 'America/New_York' },
        { limit: 2, window: '1m', algorithm: 'fixed-window' },
      ],
      store,
    })
    expect((await limiter.consume('k')).allowed).toBe(true)
    expect((await limiter.consume('k')).allowed).toBe(true)
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now += 60_000
    const decision = await limiter.consume('k')
    expect(decision.allowed).toBe(true)
    expect(decision.policies[0]).toMatchObject({ remaining: 97 })
  })

  it('names its period in the default policy name and validates its options', () => {
    expect(parsePolicy({ limit: 10_000, period: 'month', timeZone: 'Europe/Berlin' }).name).toBe('10000-per-month')
    const fails = (input: object, pattern: RegExp) => {
      expect(() => parsePolicy(input, 'limits[0]')).toThrow(ConfigError)
      expect(() => parsePolicy(input, 'limits[0]')).toThrow(pattern)
    }
    fails({ limit: 1, period: 'fortnight' }, /limits\[0\]\.period.*fortnight/)
    fails({ limit: 1, period: 'month', timeZone: 'Europe/Atlantis' }, /limits\[0\]\.timeZone.*Europe\/Atlantis/)
    fails({ limit: 1, period: 'month', window: '30d' }, /limits\[0\]\.window.*cannot be combined with `period`/)
    fails({ limit: 1, period: 'day', algorithm: 'gcra' }, /limits\[0\]\.algorithm.*gcra/)
    fails({ limit: 1, window: '1d', timeZone: 'UTC' }, /limits\[0\]\.timeZone.*only with `period`/)
    fails({ limit: 1, period: 'month', anchor: '2026-13-01' }, /limits\[0\]\.anchor.*2026-13-01/)
  })

  it('an anchor function that returns no date fails the request with a ConfigError', async () => {
    const limiter = createLimiter({ limits: { limit: 1, period: 'month', anchor: () => 'soon' } })
    await expect(limiter.consume('k')).rejects.toThrow(/anchor\(key\).*soon/)
    await expect(limiter.peek('k')).rejects.toThrow(ConfigError)
  })

  it('is refused at createLimiter by a store that cannot start a window where a period does', () => {
    expect(() => createLimiter({ limits: { limit: 1, period: 'day' }, store: new SketchStore() })).toThrow(
      /limits\[0\]\.period is not served by SketchStore.*day/,
    )
  })
})
