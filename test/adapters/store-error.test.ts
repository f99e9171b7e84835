// onStoreError: 'deny' answers "the store is unavailable" (503), and observe reports what the
// middleware decided: the same cases against every adapter of the harness over real HTTP.
import { ConfigError, createLimiter, MemoryStore, type ObserveEvent, STORE_UNAVAILABLE } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type App, type AppSpec, type Harness, harnesses } from './harness.js'

async function withApp(h: Harness, spec: AppSpec, run: (app: App) => Promise<void>): Promise<void> {
  const app = await h.app(spec)
  try {
    await run(app)
  } finally {
    await app.close()
  }
}

const down: Store = {
  consume: () => Promise.reject(new Error('connection refused')),
  peek: () => Promise.reject(new Error('connection refused')),
  reset: () => Promise.reject(new Error('connection refused')),
}

describe.each(harnesses)('@sluice/$name when the store fails', (h) => {
  let warn: { mock: { calls: unknown[][] }; mockRestore(): void }
  beforeEach(() => {
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(() => warn.mockRestore())

  it("onStoreError: 'deny' answers 503 with Retry-After and a store-unavailable problem, no RateLimit headers", async () => {
    const spec = {
      use: [h.rateLimit({ limits: '100/min', store: down, onStoreError: 'deny' })],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      const reply = await app.get('/')
      expect(reply.status).toBe(503)
      expect(reply.headers['retry-after']).toBe('1')
      expect(reply.headers.ratelimit).toBeUndefined()
      expect(reply.headers['ratelimit-policy']).toBeUndefined()
      expect(reply.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(reply.body).toEqual({
        type: STORE_UNAVAILABLE,
        title: 'Rate limit store unavailable',
        status: 503,
        detail:
          "The rate limiter's store is unavailable, so the request could not be checked against its limits. Retry in 1 second.",
        'violated-policies': [],
      })
      expect(JSON.stringify(reply.body)).not.toMatch(/would be exceeded/)
      expect(app.handled).toBe(0)
    })
  })

  it('storeErrorStatusCode sets another status; a limit really exceeded is still 429', async () => {
    const limited = createLimiter({ limits: '1/min', store: new MemoryStore() })
    const spec = {
      use: [h.rateLimit({ limits: '100/min', store: down, onStoreError: 'deny', storeErrorStatusCode: 500 })],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      const reply = await app.get('/')
      expect(reply.status).toBe(500)
      expect(reply.body).toMatchObject({ type: STORE_UNAVAILABLE, status: 500 })
    })
    await withApp(h, { use: [h.rateLimit({ limiter: limited })], routes: [{ path: '/' }] }, async (app) => {
      await app.get('/')
      expect((await app.get('/')).status).toBe(429)
    })
    expect(() => h.rateLimit({ limits: '1/s', storeErrorStatusCode: 200 })).toThrow(ConfigError)
  })

  it("onStoreError: 'allow' lets requests through, warning once, and observe sees every event", async () => {
    const events: ObserveEvent[] = []
    const spec = {
      use: [
        h.rateLimit({
          limits: '100/min',
          store: down,
          breaker: { failures: 2, cooldown: '1h' },
          key: () => 'k',
          observe: (event) => {
            events.push(event)
          },
        }),
      ],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      for (let i = 0; i < 3; i++) expect((await app.get('/')).status).toBe(200)
    })
    expect(events.map((e) => e.type)).toEqual([
      'store-error',
      'decision',
      'store-error',
      'breaker-open',
      'decision',
      'decision',
    ])
    const decisions = events.filter((e) => e.type === 'decision')
    expect(decisions.map((e) => [e.key, e.decision.allowed, e.decision.source])).toEqual([
      ['k', true, 'error'],
      ['k', true, 'error'],
      ['k', true, 'error'],
    ])
    expect(warn.mock.calls.map((c) => String(c[0]).split(':')[0])).toEqual(['[sluice] SLUICE_STORE_FAILING'])
  })
})

describe.each(harnesses)('@sluice/$name observe', (h) => {
  let warn: { mock: { calls: unknown[][] }; mockRestore(): void }
  beforeEach(() => {
    warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
  })
  afterEach(() => warn.mockRestore())

  it('reports each decision with its key and store time', async () => {
    const events: ObserveEvent[] = []
    const spec = {
      use: [h.rateLimit({ limits: '2/min', key: () => 'k', observe: (event) => void events.push(event) })],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      for (let i = 0; i < 3; i++) await app.get('/')
    })
    expect(events.map((e) => e.type === 'decision' && [e.key, e.decision.allowed, e.decision.source])).toEqual([
      ['k', true, 'store'],
      ['k', true, 'store'],
      ['k', false, 'store'],
    ])
    for (const event of events) expect(event.type === 'decision' && event.storeMs >= 0).toBe(true)
  })

  it('an observe that throws changes no decision and is reported once', async () => {
    const spec = {
      use: [
        h.rateLimit({
          limits: '2/min',
          key: () => 'k',
          observe: () => {
            throw new Error('dashboard down')
          },
        }),
      ],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      expect((await app.get('/')).status).toBe(200)
      expect((await app.get('/')).status).toBe(200)
      expect((await app.get('/')).status).toBe(429)
    })
    const messages = warn.mock.calls.map((c) => String(c[0]))
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatch(/SLUICE_OBSERVE_THREW.*dashboard down/)
  })

  it('concurrencyLimit reports admissions and refusals', async () => {
    const events: ObserveEvent[] = []
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered = (): void => {}
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    const spec = {
      use: [h.concurrencyLimit({ limit: 1, key: () => 'k', observe: (event) => void events.push(event) })],
      routes: [{ path: '/', handler: { stream: gate, entered } }],
    }
    await withApp(h, spec, async (app) => {
      const first = app.get('/')
      await inside
      expect((await app.get('/')).status).toBe(429)
      release()
      expect((await first).status).toBe(200)
    })
    expect(events).toEqual([
      { type: 'concurrency', key: 'k', name: 'concurrency', limit: 1, allowed: true, inflight: 1 },
      { type: 'concurrency', key: 'k', name: 'concurrency', limit: 1, allowed: false, inflight: 1 },
    ])
  })

  it('belongs to the prebuilt limiter when one is given', () => {
    const limiter = createLimiter({ limits: '1/s' })
    expect(() => h.rateLimit({ limiter, observe: () => {} })).toThrow(/observe belongs to the prebuilt limiter/)
    expect(() => h.rateLimit({ limiter, breaker: false })).toThrow(/breaker belongs to the prebuilt limiter/)
    expect(() => h.concurrencyLimit({ limit: 1, observe: 5 as never })).toThrow(ConfigError)
  })
})
