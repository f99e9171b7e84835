import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { Adapter } from '../http/common-options.js'
import type { ForwardedTrust } from '../http/proxy-check.js'
import type { Store } from '../stores/contract.js'
import { type Validate, WARNING_CODES, type WarningCode } from './validations.js'

type Args = [request: { ip: string; forwarded?: boolean }]

function adapterTrusting(trust: ForwardedTrust): Adapter<Args> {
  return {
    name: '@sluice/test',
    addressSource: 'ip',
    address: (request) => request.ip,
    status: () => 200,
    proxy: {
      trust: () => trust,
      forwarded: (request) => request.forwarded === true,
      setting: "the test's trust setting",
      advice: 'set it',
    },
  }
}

const behindProxy = { ip: '192.0.2.1', forwarded: true }

/** A store whose every call fails: each limiter on it reports SLUICE_STORE_FAILING. */
const failingStore: Store = {
  consume: () => Promise.reject(new Error('down')),
  peek: () => Promise.reject(new Error('down')),
  reset: () => Promise.reject(new Error('down')),
}

/**
 * Provokes one warning twice through the real component that gives it, with `validate` on that
 * component. Modules are loaded afresh for each case, since SLUICE_SHARED_POLICY is said once per process.
 */
const provoke: Record<WarningCode, (validate: Validate | undefined) => Promise<void>> = {
  async SLUICE_UNTRUSTED_PROXY(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const handler = createRateLimitHandler({ limits: '10/min', validate }, adapterTrusting('ignored'))
    await handler.plan(behindProxy)
    await handler.plan(behindProxy)
  },
  async SLUICE_PERMISSIVE_TRUST_PROXY(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const handler = createRateLimitHandler({ limits: '10/min', validate }, adapterTrusting('any'))
    await handler.plan(behindProxy)
    await handler.plan(behindProxy)
  },
  async SLUICE_SHARED_POLICY(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const { MemoryStore } = await import('../stores/memory-store.js')
    const store = new MemoryStore()
    for (let i = 0; i < 3; i++) createRateLimitHandler({ limits: '10/min', store, validate }, adapterTrusting('hops'))
  },
  async SLUICE_UNUSABLE_KEY(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const handler = createRateLimitHandler(
      { limits: '10/min', key: (_request: Args[0]) => '', validate },
      adapterTrusting('hops'),
    )
    await handler.plan(behindProxy)
    await handler.plan(behindProxy)
  },
  async SLUICE_ACTUAL_COST_FAILED(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const actualCost = (_request: Args[0]): number => {
      throw new Error('no usage reported')
    }
    const handler = createRateLimitHandler({ limits: '10/min', actualCost, validate }, adapterTrusting('hops'))
    for (let i = 0; i < 2; i++) {
      const plan = await handler.plan(behindProxy)
      ;(plan as { settle?: (completed: boolean) => void }).settle?.(true)
    }
  },
  // Through the middleware, which hands its validate to the limiter it builds.
  async SLUICE_STORE_FAILING(validate) {
    const { createRateLimitHandler } = await import('../http/rate-limit.js')
    const handler = createRateLimitHandler({ limits: '10/min', store: failingStore, validate }, adapterTrusting('hops'))
    await handler.plan(behindProxy)
    await handler.plan(behindProxy)
  },
  async SLUICE_STORE_RECOVERED(validate) {
    const { createLimiter } = await import('../limiter/limiter.js')
    const { MemoryStore } = await import('../stores/memory-store.js')
    const memory = new MemoryStore()
    let down = false
    const flapping: Store = {
      consume: (...args) => (down ? Promise.reject(new Error('down')) : memory.consume(...args)),
      peek: (...args) => memory.peek(...args),
      reset: (...args) => memory.reset(...args),
    }
    const limiter = createLimiter({ limits: '10/min', store: flapping, validate })
    for (let i = 0; i < 2; i++) {
      down = true
      await limiter.consume('k')
      down = false
      await limiter.consume('k')
    }
  },
  async SLUICE_OBSERVE_THREW(validate) {
    const { createLimiter } = await import('../limiter/limiter.js')
    const observe = () => {
      throw new Error('observer bug')
    }
    const limiter = createLimiter({ limits: '10/min', observe, validate })
    await limiter.consume('k')
    await limiter.consume('k')
  },
  async SLUICE_MEMORY_STORE_FULL(validate) {
    const { createLimiter } = await import('../limiter/limiter.js')
    const { MemoryStore } = await import('../stores/memory-store.js')
    const limiter = createLimiter({ limits: '1/min', store: new MemoryStore({ maxKeys: 1, validate }) })
    await limiter.consume('limited')
    await limiter.consume('new one')
    await limiter.consume('another')
  },
}

describe('runtime warnings', () => {
  let logged: string[]
  beforeEach(() => {
    vi.resetModules()
    logged = []
    const log = (message: unknown) => void logged.push(String(message))
    vi.spyOn(console, 'warn').mockImplementation(log)
    vi.spyOn(console, 'error').mockImplementation(log)
  })
  afterEach(() => vi.restoreAllMocks())

  const said = (code: WarningCode) => logged.filter((line) => line.startsWith(`[sluice] ${code}: `)).length

  describe.each(WARNING_CODES)('%s', (code) => {
    it('is said once by default, and with validate: true', async () => {
      await provoke[code](undefined)
      expect(said(code)).toBe(1)
      vi.resetModules()
      await provoke[code](true)
      expect(said(code)).toBe(2)
    })

    it('is not said with validate: false', async () => {
      await provoke[code](false)
      expect(said(code)).toBe(0)
    })

    it('is switched off alone by its code', async () => {
      await provoke[code]({ [code]: false })
      expect(said(code)).toBe(0)
      vi.resetModules()
      await provoke[code]({ [code]: true })
      expect(said(code)).toBe(1)
    })

    it('stays on when every other code is switched off', async () => {
      const others = Object.fromEntries(WARNING_CODES.filter((other) => other !== code).map((other) => [other, false]))
      await provoke[code](others)
      expect(said(code)).toBe(1)
    })
  })

  it('teaches how to switch a check off by its code', async () => {
    await provoke.SLUICE_UNTRUSTED_PROXY(undefined)
    expect(logged[0]).toMatch(/validate: \{ SLUICE_UNTRUSTED_PROXY: false \}/)
  })
})

describe('validate option', () => {
  it('names an unknown code, with the one meant', async () => {
    const { createLimiter } = await import('../limiter/limiter.js')
    expect(() => createLimiter({ limits: '1/s', validate: { SLUICE_STORE_FAILNG: false } as Validate })).toThrow(
      /^validate must name only warning codes: did you mean SLUICE_STORE_FAILING\?, got "SLUICE_STORE_FAILNG"$/,
    )
    expect(() => createLimiter({ limits: '1/s', validate: { verbose: false } as Validate })).toThrow(
      /^validate must name only warning codes \(SLUICE_UNTRUSTED_PROXY, .*SLUICE_MEMORY_STORE_FULL\), got "verbose"$/,
    )
  })

  it('takes only true or false for a code, and an object or a boolean as a whole', async () => {
    const { MemoryStore } = await import('../stores/memory-store.js')
    expect(() => new MemoryStore({ validate: { SLUICE_MEMORY_STORE_FULL: 0 } as unknown as Validate })).toThrow(
      /^validate\.SLUICE_MEMORY_STORE_FULL must be true or false, got 0$/,
    )
    for (const value of ['off', null, ['SLUICE_UNUSABLE_KEY']]) {
      expect(() => new MemoryStore({ validate: value as unknown as Validate })).toThrow(
        /^validate must be true, false or an object/,
      )
    }
  })
})
