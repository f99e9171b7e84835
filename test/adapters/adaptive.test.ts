// adaptiveConcurrency() in every adapter, over real HTTP: refusals, classes, the queue, and the
// latency samples that responses (finished or abandoned) give the limiter.
import { ConfigError, createAdaptiveLimiter, type ObserveEvent, TEMPORARY_REDUCED_CAPACITY } from '@sluice/core'
import { describe, expect, it } from 'vitest'
import { until } from '../support/wait.js'
import { type App, type AppSpec, type Harness, harnesses } from './harness.js'

async function withApp(h: Harness, spec: AppSpec, run: (app: App) => Promise<void>): Promise<void> {
  const app = await h.app(spec)
  try {
    await run(app)
  } finally {
    await app.close()
  }
}

function deferred() {
  let resolve = (): void => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** A limit pinned at `limit`, so the cases test admission, not learning. */
const pinned = (limit: number) => ({ min: limit, max: limit, initial: limit, probe: false as const })

describe.each(harnesses)('@sluice/$name adaptiveConcurrency', (h) => {
  it('refuses over the limit with 503, Retry-After and a problem body while a streamed response holds the slot', async () => {
    const gate = deferred()
    const entered = deferred()
    const limit = h.adaptiveConcurrency({ ...pinned(1), queue: false, name: 'service' })
    const spec = {
      routes: [
        { path: '/slow', use: [limit], handler: { stream: gate.promise, entered: entered.resolve } },
        { path: '/fast', use: [limit] },
      ],
    }
    await withApp(h, spec, async (app) => {
      const slow = app.get('/slow')
      await entered.promise
      const refused = await app.get('/fast')
      expect(refused.status).toBe(503)
      expect(refused.headers['retry-after']).toBe('1')
      expect(refused.headers['content-type']).toBe('application/problem+json')
      expect(refused.body).toMatchObject({
        type: TEMPORARY_REDUCED_CAPACITY,
        title: 'Service Unavailable',
        status: 503,
        'violated-policies': ['service'],
      })
      expect(refused.headers.ratelimit).toBeUndefined()
      gate.resolve()
      expect((await slow).text).toBe('ab')
      expect((await app.get('/fast')).status).toBe(200)
      expect(limit.limiter.stats().classes.default).toMatchObject({ inflight: 0, refused: 1 })
    })
  })

  it('answers 429 when statusCode says so, and RateLimit headers when asked', async () => {
    const gate = deferred()
    const entered = deferred()
    const limit = h.adaptiveConcurrency({ ...pinned(1), queue: false, statusCode: 429, headers: 'draft-11' })
    const spec = {
      routes: [
        { path: '/slow', use: [limit], handler: { stream: gate.promise, entered: entered.resolve } },
        { path: '/fast', use: [limit] },
      ],
    }
    await withApp(h, spec, async (app) => {
      const slow = app.get('/slow')
      await entered.promise
      const refused = await app.get('/fast')
      expect(refused.status).toBe(429)
      expect(refused.headers.ratelimit).toBe('"adaptive";r=0')
      expect(refused.headers['ratelimit-policy']).toBe('"adaptive";q=1;qu="concurrent-requests"')
      gate.resolve()
      await slow
    })
  })

  it('queues over the limit and lets a critical request push a waiting default one out', async () => {
    const gate = deferred()
    const entered = deferred()
    const limit = h.adaptiveConcurrency({
      ...pinned(1),
      classes: ['critical', 'default'],
      queue: { size: 1, maxWait: '10s' },
      priority: (r) => r.header('x-class'),
    })
    const spec = {
      routes: [
        { path: '/slow', use: [limit], handler: { stream: gate.promise, entered: entered.resolve } },
        { path: '/fast', use: [limit] },
      ],
    }
    await withApp(h, spec, async (app) => {
      const slow = app.get('/slow')
      await entered.promise
      const waiting = app.get('/fast', { 'x-class': 'default' })
      await until(() => limit.limiter.queued === 1)
      const critical = app.get('/fast', { 'x-class': 'critical' })
      const evicted = await waiting
      expect(evicted.status).toBe(503)
      expect(limit.limiter.stats().classes.critical?.queued).toBe(1)
      gate.resolve()
      await slow
      expect((await critical).status).toBe(200)
      expect(limit.limiter.stats().classes).toMatchObject({ critical: { refused: 0 }, default: { refused: 1 } })
    })
  })

  it('learns from each response: a client that gives up counts as a drop (AIMD backs off), a finished one does not', async () => {
    const events: ObserveEvent[] = []
    const limit = h.adaptiveConcurrency({
      algorithm: 'aimd',
      initial: 10,
      min: 1,
      max: 10,
      window: 1,
      windowSamples: 1,
      probe: false,
      observe: (e) => void events.push(e),
    })
    const never = new Promise<void>(() => {})
    const spec = {
      routes: [
        { path: '/hang', use: [limit], handler: { stream: never } },
        { path: '/fast', use: [limit] },
      ],
    }
    await withApp(h, spec, async (app) => {
      await new Promise((resolve) => setTimeout(resolve, 2))
      expect((await app.get('/fast')).status).toBe(200)
      await until(() => events.some((e) => e.type === 'overload-limit'))
      expect(limit.limiter.limit).toBe(10)
      const abort = await app.openAndAbort('/hang')
      abort()
      await until(() => limit.limiter.inflight === 0 && limit.limiter.limit === 9)
    })
  })

  it('eventLoopDelay: a threshold alone is enough on Node (the adapter makes the histogram); Hono needs one given', () => {
    const options = { eventLoopDelay: { threshold: '100ms' } }
    if (h.name === 'hono') expect(() => h.adaptiveConcurrency(options)).toThrow(/histogram/)
    else expect(h.adaptiveConcurrency(options).limiter.algorithm).toBe('gradient2')
  })

  it('shares a limiter made with createAdaptiveLimiter, and refuses its options beside it', async () => {
    const limiter = createAdaptiveLimiter({ ...pinned(2), name: 'shared' })
    const limit = h.adaptiveConcurrency({ limiter })
    expect(limit.limiter).toBe(limiter)
    await withApp(h, { routes: [{ path: '/', use: [limit] }] }, async (app) => {
      expect((await app.get('/')).status).toBe(200)
    })
    expect(() => h.adaptiveConcurrency({ limiter, max: 5 })).toThrow(ConfigError)
    expect(() => h.adaptiveConcurrency({ key: () => 'k' } as never)).toThrow(/not an option of adaptiveConcurrency/)
    expect(() => h.adaptiveConcurrency({ min: 9, max: 3 })).toThrow(/min must not be above max \(3\), got 9/)
  })
})
