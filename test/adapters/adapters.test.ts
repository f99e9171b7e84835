import {
  ConfigError,
  createLimiter,
  type Decision,
  type Limiter,
  MemoryStore,
  QUOTA_EXCEEDED,
  SketchStore,
} from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { clockedStore, T0 } from '../support/clock.js'
import { until } from '../support/wait.js'
import { type App, type AppSpec, type Harness, harnesses, type Reply, type Req } from './harness.js'
import { nestHarnesses } from './nest-harness.js'

async function withApp(h: Harness, spec: AppSpec, run: (app: App) => Promise<void>): Promise<void> {
  const app = await h.app(spec)
  try {
    await run(app)
  } finally {
    await app.close()
  }
}

const decisionOf = (reply: Reply) => (reply.body as { rateLimit: Decision | null }).rateLimit
/** List members in a stable order: stacked limiters append in framework-specific order. */
const members = (value: string | undefined) => value?.split(', ').sort()

function deferred() {
  let resolve = (): void => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/** The `r` of the only member of a draft-11 RateLimit header. */
const remainingOf = (reply: Reply) => Number(/;r=(\d+)/.exec(reply.headers.ratelimit ?? '')?.[1])

/** Waits for a refund, which may land just after the response that caused it. */
const refunded = (limiter: Limiter, key: string, remaining: number) =>
  until(async () => (await limiter.peek(key)).remaining === remaining, { timeout: 3000 })

interface Case {
  name: string
  run(h: Harness): Promise<void>
}

const cases: Case[] = [
  {
    name: 'admits with draft-11 headers, then denies with Retry-After and problem details',
    async run(h) {
      const { clock, store } = clockedStore()
      const spec = { use: [h.rateLimit({ limits: ['100/min', '2/s'], store })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const first = await app.get('/')
        expect(first.status).toBe(200)
        expect(first.headers['ratelimit-policy']).toBe('"100-per-1m";q=100;w=60, "2-per-1s";q=2;w=1')
        // t: back to full once the 6 s sub-window holding the request has slid out (60 + 6 s).
        expect(first.headers.ratelimit).toBe('"100-per-1m";r=99;t=66, "2-per-1s";r=1;t=2')
        expect(first.headers['retry-after']).toBeUndefined()
        expect(decisionOf(first)).toMatchObject({ allowed: true, limit: 2, remaining: 1, key: '127.0.0.1' })

        const second = await app.get('/')
        expect(second.headers.ratelimit).toBe('"100-per-1m";r=98;t=66, "2-per-1s";r=0;t=2')

        const denied = await app.get('/')
        expect(denied.status).toBe(429)
        expect(denied.headers['retry-after']).toBe('2')
        expect(denied.headers['ratelimit-policy']).toBe('"100-per-1m";q=100;w=60, "2-per-1s";q=2;w=1')
        // The 100/min member is not asserted exactly: core reports its remaining as if the
        // denied request had been taken (97, not 98); see the report on evaluate().
        expect(denied.headers.ratelimit).toMatch(/^"100-per-1m";r=98;t=66, "2-per-1s";r=0;t=2$/)
        expect(denied.headers['content-type']).toBe('application/problem+json')
        expect(denied.body).toEqual({
          type: QUOTA_EXCEEDED,
          title: 'Too Many Requests',
          status: 429,
          detail: 'Too many requests: the 2-per-1s limit would be exceeded. Retry in 2 seconds.',
          'violated-policies': ['2-per-1s'],
        })
        expect(app.handled).toBe(2)

        clock.now += 1500
        const later = await app.get('/')
        expect(later.status).toBe(200)
        // Ten sub-windows by default: the two requests at 0 left the 2/s window at 1100 ms.
        expect(later.headers.ratelimit).toBe('"100-per-1m";r=97;t=65, "2-per-1s";r=1;t=2')
      })
    },
  },
  {
    name: "headers: 'draft-7' sends express-rate-limit's binding-policy dictionary",
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        use: [h.rateLimit({ limits: ['100/min', '2/s'], store, headers: 'draft-7' })],
        routes: [{ path: '/' }],
      }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.headers['ratelimit-policy']).toBe('2;w=1')
        expect(reply.headers.ratelimit).toBe('limit=2, remaining=1, reset=2')
        expect(reply.headers['ratelimit-limit']).toBeUndefined()
      })
    },
  },
  {
    name: "headers: 'draft-6' sends the four separate fields",
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        use: [h.rateLimit({ limits: ['100/min', '2/s'], store, headers: 'draft-6' })],
        routes: [{ path: '/' }],
      }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const reply = await app.get('/')
        expect(reply.headers['ratelimit-policy']).toBe('2;w=1')
        expect(reply.headers['ratelimit-limit']).toBe('2')
        expect(reply.headers['ratelimit-remaining']).toBe('0')
        expect(reply.headers['ratelimit-reset']).toBe('2')
        expect(reply.headers.ratelimit).toBeUndefined()
      })
    },
  },
  {
    name: "headers: 'legacy' sends X-RateLimit-* with an epoch Reset",
    async run(h) {
      vi.useFakeTimers({ toFake: ['Date'], now: T0 })
      const { store } = clockedStore()
      const limits = { limit: 5, window: '1m', algorithm: 'fixed-window' as const }
      const spec = { use: [h.rateLimit({ limits, store, headers: 'legacy' })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.headers['x-ratelimit-limit']).toBe('5')
        expect(reply.headers['x-ratelimit-remaining']).toBe('4')
        expect(reply.headers['x-ratelimit-reset']).toBe(String(T0 / 1000 + 60))
        expect(reply.headers.ratelimit).toBeUndefined()
      })
    },
  },
  {
    name: 'headers: false sends no rate-limit headers, but still Retry-After on denial',
    async run(h) {
      const { store } = clockedStore()
      const spec = { use: [h.rateLimit({ limits: '1/min', store, headers: false })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const ok = await app.get('/')
        expect(ok.headers.ratelimit).toBeUndefined()
        expect(ok.headers['ratelimit-policy']).toBeUndefined()
        const denied = await app.get('/')
        expect(denied.status).toBe(429)
        expect(denied.headers.ratelimit).toBeUndefined()
        expect(denied.headers['retry-after']).toBe('66')
      })
    },
  },
  {
    name: 'dryRun decides and reports but never blocks',
    async run(h) {
      const { store } = clockedStore()
      const limits = { limit: 1, window: '1m', algorithm: 'fixed-window' as const }
      const spec = { use: [h.rateLimit({ limits, store, dryRun: true })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const reply = await app.get('/')
        expect(reply.status).toBe(200)
        expect(decisionOf(reply)).toMatchObject({ allowed: false, remaining: 0, retryAfter: 60_000 })
        expect(reply.headers.ratelimit).toBe('"1-per-1m";r=0;t=60')
        expect(reply.headers['retry-after']).toBeUndefined()
        expect(app.handled).toBe(2)
      })
    },
  },
  {
    name: 'skip lets a request through uncounted and without headers',
    async run(h) {
      const { store } = clockedStore()
      const skip = (r: { header(n: string): string | undefined }) => r.header('x-internal') === 'yes'
      const spec = { use: [h.rateLimit({ limits: '1/min', store, skip })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const skipped = await app.get('/', { 'x-internal': 'yes' })
        expect(skipped.status).toBe(200)
        expect(skipped.headers.ratelimit).toBeUndefined()
        expect(decisionOf(skipped)).toBeNull()
        expect((await app.get('/')).status).toBe(200)
        expect((await app.get('/')).status).toBe(429)
        expect((await app.get('/', { 'x-internal': 'yes' })).status).toBe(200)
      })
    },
  },
  {
    name: 'cost takes that many units from the quota',
    async run(h) {
      const { store } = clockedStore()
      const limits = { limit: 10, window: '1m', algorithm: 'fixed-window' as const }
      const cost = (r: { header(n: string): string | undefined }) => Number(r.header('x-cost') ?? 1)
      const spec = { use: [h.rateLimit({ limits, store, cost })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/', { 'x-cost': '7' })).headers.ratelimit).toBe('"10-per-1m";r=3;t=60')
        const tooMuch = await app.get('/', { 'x-cost': '4' })
        expect(tooMuch.status).toBe(429)
        expect(tooMuch.headers['retry-after']).toBe('60')
        expect((await app.get('/', { 'x-cost': '3' })).headers.ratelimit).toBe('"10-per-1m";r=0;t=60')
      })
    },
  },
  {
    name: "limiter as a function of the request picks each request's limits (plans), headers included",
    async run(h) {
      const { store } = clockedStore()
      const free = createLimiter({ limits: '1/min', store })
      const pro = createLimiter({ limits: '3/min', store })
      const limiter = async (r: { header(n: string): string | undefined }) =>
        r.header('x-plan') === 'pro' ? pro : free
      const key = (r: { header(n: string): string | undefined }) => r.header('x-user') ?? ''
      const spec = { use: [h.rateLimit({ limiter, key })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const freeUser = { 'x-user': 'ann' }
        const proUser = { 'x-user': 'bob', 'x-plan': 'pro' }
        const first = await app.get('/', freeUser)
        expect(first.status).toBe(200)
        expect(first.headers['ratelimit-policy']).toBe('"1-per-1m";q=1;w=60')
        expect((await app.get('/', freeUser)).status).toBe(429)
        for (let i = 0; i < 3; i++) {
          const reply = await app.get('/', proUser)
          expect(reply.status).toBe(200)
          // Ten sub-windows by default; r=0: t is when the next unit comes, what the denial says (issue 13)
          expect(reply.headers.ratelimit).toBe(`"3-per-1m";r=${2 - i};t=${i === 2 ? 62 : 66}`)
        }
        const denied = await app.get('/', proUser)
        expect(denied.status).toBe(429)
        expect(denied.headers['retry-after']).toBe('62')
        expect((await free.peek('bob')).remaining).toBe(1)
      })
    },
  },
  {
    name: 'a limiter function that returns no limiter fails the request with an error naming limiter',
    async run(h) {
      const spec = { use: [h.rateLimit({ limiter: () => ({}) as Limiter })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.status).toBe(500)
        expect(reply.body).toMatchObject({ error: 'ConfigError' })
        expect((reply.body as { message: string }).message).toMatch(
          /^limiter must return a limiter made by createLimiter\(\), got /,
        )
        expect(app.handled).toBe(0)
      })
      expect(() => h.rateLimit({ limiter: () => ({}) as Limiter, store: new MemoryStore() })).toThrow(
        /^store .*belongs to the prebuilt limiter/,
      )
    },
  },
  {
    name: 'a cost function that returns no whole number fails the request with an error naming cost and the value',
    async run(h) {
      const { store } = clockedStore()
      const results: Record<string, unknown> = {
        missing: undefined,
        null: null,
        text: '3',
        zero: 0,
        half: 0.5,
        huge: 11,
      }
      const cost = (r: { header(n: string): string | undefined }) => results[r.header('x-case') as string] as number
      const spec = { use: [h.rateLimit({ limits: '10/min', store, cost })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        for (const [name, value] of Object.entries(results)) {
          const reply = await app.get('/', { 'x-case': name })
          expect(reply.status, name).toBe(500)
          expect(reply.body, name).toMatchObject({ error: 'ConfigError' })
          expect((reply.body as { message: string }).message, name).toMatch(/^cost .*got /)
          expect((reply.body as { message: string }).message, name).toContain(
            `got ${value === undefined ? 'undefined' : JSON.stringify(value)}`,
          )
        }
        expect(app.handled).toBe(0)
      })
    },
  },
  {
    name: 'key, skip and cost functions that throw or reject reach the error handler',
    async run(h) {
      const fail = (where: string) => () => {
        throw new Error(`${where} failed`)
      }
      const reject = (where: string) => (() => Promise.reject(new Error(`${where} rejected`))) as never
      const variants = [
        { key: fail('key') },
        { key: reject('key') },
        { skip: fail('skip') },
        { skip: reject('skip') },
        { cost: fail('cost') },
        { cost: reject('cost') },
      ]
      for (const variant of variants) {
        const spec = { use: [h.rateLimit({ limits: '10/min', ...variant })], routes: [{ path: '/' }] }
        await withApp(h, spec, async (app) => {
          const reply = await app.get('/')
          expect(reply.status).toBe(500)
          expect((reply.body as { message: string }).message).toMatch(/^(key|skip|cost) (failed|rejected)$/)
          expect(app.handled).toBe(0)
        })
      }
    },
  },
  {
    name: 'a key function may return a number or a bigint, counted under its decimal text',
    async run(h) {
      for (const id of [42, 42n, Promise.resolve(42)]) {
        const { store } = clockedStore()
        const key = (() => id) as never
        const spec = { use: [h.rateLimit({ limits: '1/min', store, key })], routes: [{ path: '/' }] }
        await withApp(h, spec, async (app) => {
          const first = await app.get('/')
          expect(first.status).toBe(200)
          expect(decisionOf(first)?.key).toBe('42')
          expect((await app.get('/')).status).toBe(429)
        })
      }
    },
  },
  {
    name: 'a key function that returns no key is reported once and the request is keyed by the client IP',
    async run(h) {
      const error = vi.spyOn(console, 'error').mockImplementation(() => {})
      try {
        const { store } = clockedStore()
        const returned: unknown[] = [undefined, null, '', { id: 7 }, Number.NaN]
        let next = 0
        const key = (async () => returned[next++]) as never
        const spec = { use: [h.rateLimit({ limits: '4/min', store, key })], routes: [{ path: '/' }] }
        await withApp(h, spec, async (app) => {
          for (let i = 0; i < 4; i++) {
            const reply = await app.get('/')
            expect(reply.status).toBe(200)
            expect(decisionOf(reply)).toMatchObject({ key: '127.0.0.1', remaining: 3 - i })
          }
          const fifth = await app.get('/')
          expect(fifth.status).toBe(429)
          expect(app.handled).toBe(4)
        })
        expect(error).toHaveBeenCalledTimes(1)
        expect(String(error.mock.calls[0]?.[0])).toMatch(
          /^\[sluice\] SLUICE_UNUSABLE_KEY: the key function returned undefined, which names no client/,
        )
      } finally {
        error.mockRestore()
      }
    },
  },
  {
    name: 'statusCode and a string message replace the problem details',
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        use: [h.rateLimit({ limits: '1/min', store, statusCode: 503, message: 'Slow down' })],
        routes: [{ path: '/' }],
      }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const denied = await app.get('/')
        expect(denied.status).toBe(503)
        expect(denied.headers['content-type']).toBe('text/plain; charset=utf-8')
        expect(denied.text).toBe('Slow down')
        expect(denied.headers['retry-after']).toBe('66')
      })
    },
  },
  {
    name: 'a message function builds a JSON body from the request and the decision',
    async run(h) {
      const { store } = clockedStore()
      const message = (r: { header(n: string): string | undefined }, d: Decision) => ({
        user: r.header('x-user'),
        wait: d.retryAfter,
      })
      const spec = { use: [h.rateLimit({ limits: '1/min', store, message })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const denied = await app.get('/', { 'x-user': 'ada' })
        expect(denied.status).toBe(429)
        expect(denied.headers['content-type']).toBe('application/json')
        expect(denied.body).toEqual({ user: 'ada', wait: 66_000 })
      })
    },
  },
  {
    name: 'an onLimited that answers nothing gets the default denial, never a hanging request (issue 13)',
    async run(h) {
      const { store } = clockedStore()
      const onLimited = () => ({ body: null, silent: true })
      const spec = {
        use: [h.rateLimit({ limits: '1/min', store, onLimited })],
        routes: [{ path: '/' }],
      }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const denied = await app.get('/')
        expect(denied.status).toBe(429)
        expect(denied.headers['content-type']).toBe('application/problem+json')
        expect(denied.body).toMatchObject({ status: 429, 'violated-policies': ['1-per-1m'] })
        expect(denied.headers['retry-after']).toBe('66')
        expect(app.handled).toBe(1)
      })
    },
  },
  {
    name: 'a concurrencyLimit denial has Retry-After: 1 s by default, configurable, or none; a silent onLimited gets the default (issue 13)',
    async run(h) {
      const never = new Promise<void>(() => {})
      for (const [options, expected] of [
        [{}, '1'],
        [{ retryAfter: '2500ms' }, '3'],
        [{ retryAfter: false }, undefined],
        [{ onLimited: () => ({ body: null, silent: true }) }, '1'],
      ] as const) {
        const limit = h.concurrencyLimit({ limit: 1, ...options })
        const spec = {
          routes: [
            { path: '/hang', use: [limit], handler: { stream: never } },
            { path: '/fast', use: [limit] },
          ],
        }
        await withApp(h, spec, async (app) => {
          const abort = await app.openAndAbort('/hang')
          const refused = await app.get('/fast')
          expect(refused.status).toBe(429)
          expect(refused.headers['retry-after']).toBe(expected)
          expect(refused.headers['content-type']).toBe('application/problem+json')
          abort()
        })
      }
    },
  },
  {
    name: 'requestPropertyName: stacked limiters expose their decisions under their own names (issue 13)',
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        use: [
          h.rateLimit({ limits: '100/min', store, namespace: 'global' }),
          h.rateLimit({ limits: '5/min', store, namespace: 'login', requestPropertyName: 'loginLimit' }),
        ],
        routes: [{ path: '/', handler: { properties: ['rateLimit', 'loginLimit'] } }],
      }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.body).toMatchObject({
          rateLimit: { limit: 100, remaining: 99 },
          loginLimit: { limit: 5, remaining: 4 },
        })
      })
      expect(() => h.rateLimit({ limits: '1/s', requestPropertyName: '__proto__' })).toThrow(
        /^requestPropertyName must be/,
      )
    },
  },
  {
    name: 'onLimited writes the response, with status and headers already set',
    async run(h) {
      const { store } = clockedStore()
      const onLimited = (_r: unknown, d: Decision) => ({
        status: 420,
        body: { custom: true, policies: d.policies.length },
      })
      const spec = { use: [h.rateLimit({ limits: '1/min', store, onLimited })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        await app.get('/')
        const denied = await app.get('/')
        expect(denied.status).toBe(420)
        expect(denied.body).toEqual({ custom: true, policies: 1 })
        expect(denied.headers['retry-after']).toBe('66')
        expect(denied.headers.ratelimit).toBe('"1-per-1m";r=0;t=66')
        expect(app.handled).toBe(1)
      })
    },
  },
  {
    name: 'a per-route limiter leaves other routes alone',
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        routes: [{ path: '/a', use: [h.rateLimit({ limits: '1/min', store })] }, { path: '/b' }],
      }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/a')).status).toBe(200)
        expect((await app.get('/a')).status).toBe(429)
        const other = await app.get('/b')
        expect(other.status).toBe(200)
        expect(other.headers.ratelimit).toBeUndefined()
      })
    },
  },
  {
    name: 'one prebuilt limiter shared by several routes counts them together',
    async run(h) {
      const { store } = clockedStore()
      const limiter = createLimiter({ limits: { limit: 2, window: '1m', algorithm: 'fixed-window' }, store })
      const spec = {
        routes: [
          { path: '/a', use: [h.rateLimit({ limiter })] },
          { path: '/b', use: [h.rateLimit({ limiter })] },
        ],
      }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/a')).headers.ratelimit).toBe('"2-per-1m";r=1;t=60')
        expect((await app.get('/b')).headers.ratelimit).toBe('"2-per-1m";r=0;t=60')
        expect((await app.get('/a')).status).toBe(429)
        expect((await limiter.peek('127.0.0.1')).remaining).toBe(0)
      })
    },
  },
  {
    name: 'stacked limiters each add their members to the draft-11 lists',
    async run(h) {
      const { store } = clockedStore()
      const global = h.rateLimit({
        limits: { limit: 100, window: '1m', algorithm: 'fixed-window', name: 'global' },
        store,
      })
      const burst = h.rateLimit({ limits: { limit: 1, window: '1s', algorithm: 'fixed-window', name: 'burst' }, store })
      await withApp(h, { use: [global], routes: [{ path: '/', use: [burst] }] }, async (app) => {
        const ok = await app.get('/')
        expect(members(ok.headers['ratelimit-policy'])).toEqual(['"burst";q=1;w=1', '"global";q=100;w=60'])
        expect(members(ok.headers.ratelimit)).toEqual(['"burst";r=0;t=1', '"global";r=99;t=60'])
        const denied = await app.get('/')
        expect(denied.status).toBe(429)
        expect(members(denied.headers.ratelimit)).toEqual(['"burst";r=0;t=1', '"global";r=98;t=60'])
      })
    },
  },
  {
    name: "stacked limiters in 'draft-7' mode: the one that runs last writes the single-policy fields",
    async run(h) {
      const { store } = clockedStore()
      const limits = (limit: number, name: string) => ({
        limit,
        window: '1m',
        algorithm: 'fixed-window' as const,
        name,
      })
      const global = h.rateLimit({ limits: limits(2, 'global'), store, headers: 'draft-7' })
      const route = h.rateLimit({ limits: limits(100, 'route'), store, headers: 'draft-7' })
      await withApp(h, { use: [global], routes: [{ path: '/', use: [route] }] }, async (app) => {
        const ok = await app.get('/')
        expect(ok.headers.ratelimit).toBe('limit=100, remaining=99, reset=60')
        expect(ok.headers['ratelimit-policy']).toBe('100;w=60')
        await app.get('/')
        const denied = await app.get('/')
        expect(denied.status).toBe(429)
        expect(denied.headers.ratelimit).toBe('limit=2, remaining=0, reset=60')
      })
    },
  },
  {
    name: 'a spoofed X-Forwarded-For does not change the key unless the proxy is trusted',
    async run(h) {
      const forwarded = { 'x-forwarded-for': '198.51.100.66, 203.0.113.7' }
      await withApp(h, { use: [h.rateLimit({ limits: '10/min' })], routes: [{ path: '/' }] }, async (app) => {
        expect(decisionOf(await app.get('/', forwarded))?.key).toBe('127.0.0.1')
      })
      const spec = { trustProxy: true, use: [h.rateLimit({ limits: '10/min' })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        // One trusted hop: the entry that proxy appended, not the client-written left-most one.
        expect(decisionOf(await app.get('/', forwarded))?.key).toBe('203.0.113.7')
      })
    },
  },
  {
    name: 'IPv6 clients are grouped by /56, IPv4-mapped addresses by their IPv4 address',
    async run(h) {
      const { store } = clockedStore()
      const spec = { trustProxy: true, use: [h.rateLimit({ limits: '1/min', store })], routes: [{ path: '/' }] }
      const from = (ip: string) => ({ 'x-forwarded-for': ip })
      await withApp(h, spec, async (app) => {
        const first = await app.get('/', from('2001:db8:0:1::1'))
        expect(first.status).toBe(200)
        expect(decisionOf(first)?.key).toBe('2001:db8::/56')
        expect((await app.get('/', from('2001:db8:0:ff:abcd::9'))).status).toBe(429)
        const otherNetwork = await app.get('/', from('2001:db8:0:100::1'))
        expect(otherNetwork.status).toBe(200)
        expect(decisionOf(otherNetwork)?.key).toBe('2001:db8:0:100::/56')
        expect(decisionOf(await app.get('/', from('::ffff:198.51.100.1')))?.key).toBe('198.51.100.1')
        expect((await app.get('/', from('198.51.100.1'))).status).toBe(429)
      })
    },
  },
  {
    name: 'ipv6Subnet: 64 keys each /64 apart',
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        trustProxy: true,
        use: [h.rateLimit({ limits: '1/min', store, ipv6Subnet: 64 })],
        routes: [{ path: '/' }],
      }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/', { 'x-forwarded-for': '2001:db8:0:1::1' })).status).toBe(200)
        const neighbour = await app.get('/', { 'x-forwarded-for': '2001:db8:0:2::1' })
        expect(neighbour.status).toBe(200)
        expect(decisionOf(neighbour)?.key).toBe('2001:db8:0:2::/64')
      })
    },
  },
  {
    name: 'no client address: the request fails with an error that says to pass key',
    async run(h) {
      const spec = { noAddress: true, use: [h.rateLimit({ limits: '1/min' })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.status).toBe(500)
        expect(reply.body).toMatchObject({ error: 'ClientAddressError' })
        expect((reply.body as { message: string }).message).toMatch(/could not find the client's IP address.*key/)
        expect(app.handled).toBe(0)
      })
      const withKey = {
        noAddress: true,
        use: [h.rateLimit({ limits: '1/min', key: () => 'tenant' })],
        routes: [{ path: '/' }],
      }
      await withApp(h, withKey, async (app) => {
        expect(decisionOf(await app.get('/'))?.key).toBe('tenant')
      })
    },
  },
  {
    name: 'goes on in the same tick when the store and the options answer at once (and concurrencyLimit always), after a promise when not',
    async run(h) {
      const { store } = clockedStore()
      const routes = [{ path: '/', handler: 'tick' as const }]
      await withApp(h, { use: [h.rateLimit({ limits: '10/min', store, key: () => 'k' })], routes }, async (app) => {
        expect((await app.get('/')).body).toEqual({ sameTick: true })
      })
      await withApp(h, { use: [h.concurrencyLimit({ limit: 1, key: () => 'k' })], routes }, async (app) => {
        expect((await app.get('/')).body).toEqual({ sameTick: true })
        expect((await app.get('/')).body).toEqual({ sameTick: true })
      })
      const asynchronous: Store = {
        consume: async (key, set, cost) => store.consume(key, set, cost),
        peek: (key, set) => store.peek(key, set),
        reset: (key, set) => store.reset(key, set),
      }
      const spec = { use: [h.rateLimit({ limits: '10/min', store: asynchronous, key: () => 'k' })], routes }
      await withApp(h, spec, async (app) => {
        const reply = await app.get('/')
        expect(reply.body).toEqual({ sameTick: false })
        expect(reply.headers.ratelimit).toMatch(/^"10-per-1m";r=8;t=\d+$/)
      })
    },
  },
  {
    name: 'maxDelay holds a request for its slot instead of rejecting it',
    async run(h) {
      const { store } = clockedStore()
      const limits = { limit: 10, window: '1s', algorithm: 'gcra' as const, burst: 1 }
      const spec = { use: [h.rateLimit({ limits, store, maxDelay: 500 })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/')).status).toBe(200)
        const started = performance.now()
        const held = await app.get('/')
        expect(held.status).toBe(200)
        expect(decisionOf(held)?.delay).toBe(100)
        expect(performance.now() - started).toBeGreaterThanOrEqual(95)
      })
    },
  },
  {
    name: 'misconfiguration throws a ConfigError when the middleware is built',
    async run(h) {
      expect(() => h.rateLimit({ limits: '1/s', windowMs: 1000 } as never)).toThrow(ConfigError)
      expect(() => h.rateLimit({ limits: '1/s', headers: 'draft-8' as never })).toThrow(/headers must be one of/)
      expect(() => h.concurrencyLimit({ limit: -1 })).toThrow(ConfigError)
    },
  },
  {
    name: 'skipSuccessfulRequests: successful logins give their unit back, failed ones count up to the 429',
    async run(h) {
      const limiter = createLimiter({ limits: '3/min', store: clockedStore().store })
      const spec = {
        use: [h.rateLimit({ limiter, skipSuccessfulRequests: true })],
        routes: [{ path: '/ok' }, { path: '/wrong', handler: { status: 401 } }],
      }
      await withApp(h, spec, async (app) => {
        for (let i = 0; i < 5; i++) {
          const reply = await app.get('/ok')
          expect(reply.status).toBe(200)
          // The header tells what this request took; it is given back once the response is done.
          expect(remainingOf(reply)).toBe(2)
          await refunded(limiter, '127.0.0.1', 3)
        }
        for (const remaining of [2, 1, 0]) {
          const reply = await app.get('/wrong')
          expect(reply.status).toBe(401)
          expect(remainingOf(reply)).toBe(remaining)
        }
        const denied = await app.get('/ok')
        expect(denied.status).toBe(429)
        expect(denied.headers['retry-after']).toBeDefined()
        expect((await app.get('/wrong')).status).toBe(429)
        expect(app.handled).toBe(8)
        expect((await limiter.peek('127.0.0.1')).remaining).toBe(0)
      })
    },
  },
  {
    name: 'skipFailedRequests: a thrown error and a 500 give their unit back, successes count',
    async run(h) {
      const limiter = createLimiter({ limits: '2/min', store: clockedStore().store })
      const spec = {
        use: [h.rateLimit({ limiter, skipFailedRequests: true })],
        routes: [
          { path: '/ok' },
          { path: '/throw', handler: 'throw' as const },
          { path: '/fail', handler: { status: 500 } },
        ],
      }
      await withApp(h, spec, async (app) => {
        for (let i = 0; i < 3; i++) {
          const thrown = await app.get('/throw')
          expect(thrown.status).toBe(500)
          expect(remainingOf(thrown)).toBe(1)
          await refunded(limiter, '127.0.0.1', 2)
          expect((await app.get('/fail')).status).toBe(500)
          await refunded(limiter, '127.0.0.1', 2)
        }
        expect(remainingOf(await app.get('/ok'))).toBe(1)
        expect(remainingOf(await app.get('/ok'))).toBe(0)
        expect((await app.get('/throw')).status).toBe(429)
        expect(app.handled).toBe(8)
      })
    },
  },
  {
    name: 'requestWasSuccessful decides what counts as a success, and may be async',
    async run(h) {
      const limiter = createLimiter({ limits: '2/min', store: clockedStore().store })
      // A login that answers 401 worked as designed: only server errors are failures here.
      const requestWasSuccessful = async (r: { status(): number }) => r.status() < 500
      const spec = {
        use: [h.rateLimit({ limiter, skipSuccessfulRequests: true, requestWasSuccessful })],
        routes: [
          { path: '/wrong', handler: { status: 401 } },
          { path: '/fail', handler: { status: 500 } },
        ],
      }
      await withApp(h, spec, async (app) => {
        for (let i = 0; i < 3; i++) {
          expect((await app.get('/wrong')).status).toBe(401)
          await refunded(limiter, '127.0.0.1', 2)
        }
        expect(remainingOf(await app.get('/fail'))).toBe(1)
        expect(remainingOf(await app.get('/fail'))).toBe(0)
        expect((await app.get('/wrong')).status).toBe(429)
      })
    },
  },
  {
    name: 'dryRun with skipSuccessfulRequests gives back what admitted requests took, as the real limit would',
    async run(h) {
      const limiter = createLimiter({ limits: '1/min', store: clockedStore().store })
      const spec = {
        use: [h.rateLimit({ limiter, skipSuccessfulRequests: true, dryRun: true })],
        routes: [{ path: '/ok' }, { path: '/wrong', handler: { status: 401 } }],
      }
      await withApp(h, spec, async (app) => {
        for (let i = 0; i < 3; i++) {
          expect(decisionOf(await app.get('/ok'))?.allowed).toBe(true)
          await refunded(limiter, '127.0.0.1', 1)
        }
        expect(remainingOf(await app.get('/wrong'))).toBe(0)
        // Over the limit: let through, having taken nothing, so nothing is given back.
        const over = await app.get('/ok')
        expect(over.status).toBe(200)
        expect(decisionOf(over)?.allowed).toBe(false)
        expect(remainingOf(await app.get('/wrong'))).toBe(0)
      })
    },
  },
  {
    name: 'actualCost settles what the handler spent after the response: the unused part back, an over-spend charged',
    async run(h) {
      const limiter = createLimiter({ limits: '100/min', store: clockedStore().store })
      // The handler knows its cost only after the work; the estimate up front is 10.
      const actualCost = (r: Req) => r.local('unitsUsed') as number | undefined
      const spec = {
        use: [h.rateLimit({ limiter, cost: 10, actualCost })],
        routes: [
          { path: '/cheap', handler: { spend: 3 } },
          { path: '/dear', handler: { spend: 150 } },
          { path: '/unknown' },
        ],
      }
      await withApp(h, spec, async (app) => {
        const cheap = await app.get('/cheap')
        expect(cheap.status).toBe(200)
        expect(remainingOf(cheap)).toBe(90)
        await refunded(limiter, '127.0.0.1', 97)
        // An unknown cost (undefined) keeps the estimate.
        expect(remainingOf(await app.get('/unknown'))).toBe(87)
        await refunded(limiter, '127.0.0.1', 87)
        // 150 spent on an estimate of 10: charged below zero, so the next request waits.
        expect((await app.get('/dear')).status).toBe(200)
        await until(async () => !(await limiter.peek('127.0.0.1')).allowed, { timeout: 3000 })
        const next = await app.get('/cheap')
        expect(next.status).toBe(429)
        expect(app.handled).toBe(3)
      })
    },
  },
  {
    name: 'a per-request plan switch keeps the count: limits picked per request from a plan map share a named policy',
    async run(h) {
      const { clock, store } = clockedStore()
      // The plan of each request as an app would read it from its database; here from a header.
      const plans = { free: 3, pro: 10 }
      const limiters = {
        free: createLimiter({ limits: { limit: plans.free, window: '1h', name: 'requests' }, store }),
        pro: createLimiter({ limits: { limit: plans.pro, window: '1h', name: 'requests' }, store }),
      }
      const limiter = (r: Req) => limiters[r.header('x-plan') === 'pro' ? 'pro' : 'free']
      const spec = { use: [h.rateLimit({ limiter })], routes: [{ path: '/' }] }
      await withApp(h, spec, async (app) => {
        const free = { 'x-plan': 'free' }
        const pro = { 'x-plan': 'pro' }
        expect(remainingOf(await app.get('/', free))).toBe(2)
        expect(remainingOf(await app.get('/', free))).toBe(1)
        // Upgraded: the 2 used stay used, 10 − 3 = 7 left after this request (not 9).
        const upgraded = await app.get('/', pro)
        expect(upgraded.status).toBe(200)
        expect(upgraded.headers.ratelimit).toMatch(/^"requests";r=7;t=\d+$/)
        for (let i = 0; i < 5; i++) await app.get('/', pro)
        // Downgraded with 8 used of free's 3: denied until the hour turns.
        const downgraded = await app.get('/', free)
        expect(downgraded.status).toBe(429)
        expect(Number(downgraded.headers['retry-after'])).toBeGreaterThan(0)
        // Back on pro: still the same count (8 used; the denial took nothing): 1 left after this one, then none.
        expect(remainingOf(await app.get('/', pro))).toBe(1)
        expect(remainingOf(await app.get('/', pro))).toBe(0)
        expect((await app.get('/', pro)).status).toBe(429)
        expect(app.handled).toBe(10)

        // Once the sliding hour has passed over all of them, free is whole again.
        clock.now += 2 * 3_600_000
        expect(remainingOf(await app.get('/', free))).toBe(2)
      })
    },
  },
  {
    name: 'actualCost rejects a non-function, a skip option beside it, and a store that cannot refund',
    async run(h) {
      expect(() => h.rateLimit({ limits: '1/s', actualCost: 5 as never })).toThrow(
        expect.objectContaining({ field: 'actualCost', value: 5 }),
      )
      expect(() => h.rateLimit({ limits: '1/s', actualCost: () => 1, skipSuccessfulRequests: true })).toThrow(
        expect.objectContaining({ field: 'actualCost' }),
      )
      const sketch = createLimiter({ limits: '1/s', store: new SketchStore() })
      expect(() => h.rateLimit({ limiter: sketch, actualCost: () => 1 })).toThrow(
        /actualCost needs a store that can refund/,
      )
    },
  },
  {
    name: 'skip options reject bad values and a store that cannot refund, naming the field',
    async run(h) {
      expect(() => h.rateLimit({ limits: '1/s', skipSuccessfulRequests: 'yes' as never })).toThrow(
        /^skipSuccessfulRequests must be true or false, got "yes"$/,
      )
      expect(() => h.rateLimit({ limits: '1/s', requestWasSuccessful: () => true })).toThrow(
        /requestWasSuccessful does nothing without skipSuccessfulRequests or skipFailedRequests/,
      )
      const sketch = createLimiter({ limits: '10/s', store: new SketchStore() })
      expect(() => h.rateLimit({ limiter: sketch, skipFailedRequests: true })).toThrow(/store that can refund/)
    },
  },
  {
    name: 'concurrencyLimit frees the slot when each response finishes',
    async run(h) {
      const spec = { routes: [{ path: '/', use: [h.concurrencyLimit({ limit: 1 })] }] }
      await withApp(h, spec, async (app) => {
        for (let i = 0; i < 3; i++) {
          const reply = await app.get('/')
          expect(reply.status).toBe(200)
          expect(reply.headers['ratelimit-policy']).toBe('"concurrency";q=1;qu="concurrent-requests"')
          expect(reply.headers.ratelimit).toBe('"concurrency";r=0')
        }
      })
    },
  },
  {
    name: 'concurrencyLimit refuses beyond the limit while a streamed response is open, until it ends',
    async run(h) {
      const gate = deferred()
      const entered = deferred()
      const limit = h.concurrencyLimit({ limit: 1, name: 'uploads' })
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
        expect(refused.headers['content-type']).toBe('application/problem+json')
        expect(refused.body).toMatchObject({ type: QUOTA_EXCEEDED, 'violated-policies': ['uploads'] })
        gate.resolve()
        expect((await slow).text).toBe('ab')
        expect((await app.get('/fast')).status).toBe(200)
      })
    },
  },
  {
    name: 'HEAD requests are limited and answered like GET, and free their concurrency slot',
    async run(h) {
      const { store } = clockedStore()
      const spec = {
        routes: [
          { path: '/rate', use: [h.rateLimit({ limits: '1/min', store })] },
          { path: '/busy', use: [h.concurrencyLimit({ limit: 1 })] },
        ],
      }
      await withApp(h, spec, async (app) => {
        const first = await app.head('/rate')
        expect(first.status).toBe(200)
        expect(first.headers.ratelimit).toBe('"1-per-1m";r=0;t=66')
        const denied = await app.head('/rate')
        expect(denied.status).toBe(429)
        expect(denied.headers['retry-after']).toBe('66')
        for (let i = 0; i < 3; i++) expect((await app.head('/busy')).status).toBe(200)
        expect((await app.get('/busy')).status).toBe(200)
      })
    },
  },
  {
    name: 'concurrencyLimit frees the slot when the handler throws',
    async run(h) {
      const spec = { routes: [{ path: '/', use: [h.concurrencyLimit({ limit: 1 })], handler: 'throw' as const }] }
      await withApp(h, spec, async (app) => {
        expect((await app.get('/')).status).toBe(500)
        expect((await app.get('/')).status).toBe(500)
      })
    },
  },
  {
    name: 'concurrencyLimit frees the slot when the client aborts mid-response',
    async run(h) {
      const never = new Promise<void>(() => {})
      const limit = h.concurrencyLimit({ limit: 1, statusCode: 503 })
      const spec = {
        routes: [
          { path: '/hang', use: [limit], handler: { stream: never } },
          { path: '/fast', use: [limit] },
        ],
      }
      await withApp(h, spec, async (app) => {
        const abort = await app.openAndAbort('/hang')
        const refused = await app.get('/fast')
        expect(refused.status).toBe(503)
        expect((refused.body as { title: string }).title).toBe('Service Unavailable')
        abort()
        await until(async () => (await app.get('/fast')).status === 200, { timeout: 3000 })
      })
    },
  },
]

// Hono cannot start a response before its handler; a Fastify hook that did would break the reply Fastify sends.
describe.each(harnesses.filter((h) => h.name !== 'hono' && h.name !== 'fastify'))(
  '@sluice/$name on a response already started',
  (h) => {
    it('decides and counts, leaves out the headers it can no longer send, and never runs the handler when denied', async () => {
      const { store } = clockedStore()
      const spec = {
        startResponse: true,
        use: [h.rateLimit({ limits: '1/min', store }), h.concurrencyLimit({ limit: 1 })],
        routes: [{ path: '/', handler: 'text' as const }],
      }
      await withApp(h, spec, async (app) => {
        const admitted = await app.get('/')
        expect(admitted.status).toBe(200)
        expect(admitted.text).toBe('handled')
        expect(admitted.headers.ratelimit).toBeUndefined()
        const denied = await app.get('/')
        expect(denied.status).toBe(200)
        expect(denied.headers['retry-after']).toBeUndefined()
        expect(JSON.parse(denied.text)).toMatchObject({ type: QUOTA_EXCEEDED, status: 429 })
        expect(app.handled).toBe(1)
      })
    })
  },
)

describe.each(harnesses.filter((h) => h.name !== 'hono'))('@sluice/$name with a client that goes away', (h) => {
  const never = new Promise<void>(() => {})
  const routes = [{ path: '/hang', handler: { stream: never } }, { path: '/ok' }]

  it('skipFailedRequests gives back a response the client abandoned', async () => {
    const limiter = createLimiter({ limits: '1/min', store: clockedStore().store })
    await withApp(h, { use: [h.rateLimit({ limiter, skipFailedRequests: true })], routes }, async (app) => {
      const abort = await app.openAndAbort('/hang')
      expect((await limiter.peek('127.0.0.1')).remaining).toBe(0)
      abort()
      await refunded(limiter, '127.0.0.1', 1)
      expect((await app.get('/ok')).status).toBe(200)
    })
  })

  it('skipFailedRequests gives back a request whose client left while the store was deciding', async () => {
    const memory = clockedStore().store
    const asked = deferred()
    const answer = deferred()
    const counted = deferred()
    const slow: Store = {
      consume: async (key, set, cost) => {
        asked.resolve()
        await answer.promise
        const outcomes = memory.consume(key, set, cost)
        counted.resolve()
        return outcomes
      },
      peek: (key, set) => memory.peek(key, set),
      reset: (key, set) => memory.reset(key, set),
      refund: (key, set, cost) => memory.refund(key, set, cost),
    }
    const limiter = createLimiter({ limits: '1/min', store: slow })
    await withApp(h, { use: [h.rateLimit({ limiter, skipFailedRequests: true })], routes }, async (app) => {
      await app.abortWhen('/ok', asked.promise)
      // Whether or not the server has seen the close yet, the request must end up given back.
      await new Promise((resolve) => setTimeout(resolve, 20))
      answer.resolve()
      await counted.promise
      await refunded(limiter, '127.0.0.1', 1)
    })
  })

  it('skipSuccessfulRequests still counts an abandoned response, even one that had sent 200', async () => {
    const limiter = createLimiter({ limits: '2/min', store: clockedStore().store })
    await withApp(h, { use: [h.rateLimit({ limiter, skipSuccessfulRequests: true })], routes }, async (app) => {
      const abort = await app.openAndAbort('/hang')
      abort()
      expect(remainingOf(await app.get('/ok'))).toBe(0)
      await refunded(limiter, '127.0.0.1', 1)
      expect((await app.get('/ok')).status).toBe(200)
    })
  })
})

describe.each(harnesses)('@sluice/$name proxy checks', (h) => {
  const forwarded = { 'x-forwarded-for': '198.51.100.66' }
  const warnings = () => vi.spyOn(console, 'warn').mockImplementation(() => {})
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('warns once when X-Forwarded-For arrives at an app that does not trust proxies', async () => {
    const warn = warnings()
    const spec = { use: [h.rateLimit({ limits: '10/min' })], routes: [{ path: '/' }] }
    await withApp(h, spec, async (app) => {
      expect((await app.get('/')).status).toBe(200)
      expect(warn).not.toHaveBeenCalled()
      expect((await app.get('/', forwarded)).status).toBe(200)
      expect((await app.get('/', forwarded)).status).toBe(200)
    })
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]?.[0]).toMatch(/^\[sluice\] SLUICE_UNTRUSTED_PROXY: .*shares one limit.*validate: false/)
  })

  it('checks nothing with validate: false or a key of your own', async () => {
    const warn = warnings()
    const spec = {
      use: [h.rateLimit({ limits: '10/min', validate: false }), h.rateLimit({ limits: '20/min', key: () => 'k' })],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      expect((await app.get('/', forwarded)).status).toBe(200)
    })
    expect(warn).not.toHaveBeenCalled()
    expect(() => h.rateLimit({ limits: '10/min', validate: 'no' as unknown as boolean })).toThrow(
      /^validate must be true, false or an object of warning codes such as \{ SLUICE_UNTRUSTED_PROXY: false \}, got "no"$/,
    )
  })

  it('switches the proxy check off by its code, leaving it on when another code is off', async () => {
    const warn = warnings()
    const spec = {
      use: [
        h.rateLimit({ limits: '10/min', validate: { SLUICE_UNTRUSTED_PROXY: false } }),
        h.rateLimit({ limits: '20/min', validate: { SLUICE_PERMISSIVE_TRUST_PROXY: false } }),
      ],
      routes: [{ path: '/' }],
    }
    await withApp(h, spec, async (app) => {
      expect((await app.get('/', forwarded)).status).toBe(200)
    })
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]?.[0]).toMatch(/^\[sluice\] SLUICE_UNTRUSTED_PROXY: /)
    expect(() => h.rateLimit({ limits: '10/min', validate: { SLUICE_UNTRUSTED_PROXI: false } as never })).toThrow(
      /^validate must name only warning codes: did you mean SLUICE_UNTRUSTED_PROXY\?, got "SLUICE_UNTRUSTED_PROXI"$/,
    )
  })

  // Hono has no proxy setting to get wrong: its key is the connection's peer (or Cloudflare's header).
  it.skipIf(h.name === 'hono')(
    'warns once when the app trusts every X-Forwarded-For entry, not a set number',
    async () => {
      const warn = warnings()
      for (const trustProxy of [true, 'all'] as const) {
        const spec = { trustProxy, use: [h.rateLimit({ limits: '10/min' })], routes: [{ path: '/' }] }
        await withApp(h, spec, async (app) => {
          expect((await app.get('/', forwarded)).status).toBe(200)
          expect((await app.get('/')).status).toBe(200)
        })
      }
      expect(warn).toHaveBeenCalledTimes(1)
      expect(warn.mock.calls[0]?.[0]).toMatch(
        /^\[sluice\] SLUICE_PERMISSIVE_TRUST_PROXY: .*any client can take a fresh limit/,
      )
    },
  )
})

afterEach(() => {
  vi.useRealTimers()
})

describe.each(harnesses)('@sluice/$name', (h) => {
  for (const c of cases) it(c.name, () => c.run(h))
})

/**
 * The cases the Nest guard cannot run, and why. Every other case runs on both Nest platforms
 * through `SluiceModule.forRoot()` (the app's limiter) and `@RateLimit()` (a route's).
 */
const NO_ON_LIMITED =
  "no onLimited in Nest: a denial is a RateLimitException for Nest's exception filters (test/nestjs)"
const NO_CONCURRENCY = '@sluice/nestjs has a rate limit only, no concurrencyLimit'
const ONE_LIMIT_PER_HANDLER =
  "Nest applies one limit per handler: a handler's @RateLimit() overrides the module's rather than stacking (several limits go in one limits list, decided together)"
const NEST_LEAVES_OUT: Readonly<Record<string, string>> = {
  'statusCode and a string message replace the problem details':
    "Nest's exception filter answers a string HttpException as JSON { statusCode, message } (test/nestjs)",
  'an onLimited that answers nothing gets the default denial, never a hanging request (issue 13)': NO_ON_LIMITED,
  'onLimited writes the response, with status and headers already set': NO_ON_LIMITED,
  'a concurrencyLimit denial has Retry-After: 1 s by default, configurable, or none; a silent onLimited gets the default (issue 13)':
    NO_CONCURRENCY,
  'concurrencyLimit frees the slot when each response finishes': NO_CONCURRENCY,
  'concurrencyLimit refuses beyond the limit while a streamed response is open, until it ends': NO_CONCURRENCY,
  'HEAD requests are limited and answered like GET, and free their concurrency slot': NO_CONCURRENCY,
  'concurrencyLimit frees the slot when the handler throws': NO_CONCURRENCY,
  'concurrencyLimit frees the slot when the client aborts mid-response': NO_CONCURRENCY,
  'requestPropertyName: stacked limiters expose their decisions under their own names (issue 13)':
    ONE_LIMIT_PER_HANDLER,
  'stacked limiters each add their members to the draft-11 lists': ONE_LIMIT_PER_HANDLER,
  "stacked limiters in 'draft-7' mode: the one that runs last writes the single-policy fields": ONE_LIMIT_PER_HANDLER,
  'goes on in the same tick when the store and the options answer at once (and concurrencyLimit always), after a promise when not':
    "Nest awaits every guard, so no handler runs in its request's first tick",
  'misconfiguration throws a ConfigError when the middleware is built':
    'its last line builds a concurrencyLimit; the rate-limit lines run in test/nestjs',
}

describe.each(nestHarnesses)('@sluice/nestjs on $name', (h) => {
  // The cases in NEST_LEAVES_OUT do not run here; each has its reason there (no onLimited, no
  // concurrencyLimit, one limit per handler, guards always awaited).
  for (const c of cases) if (NEST_LEAVES_OUT[c.name] === undefined) it(c.name, () => c.run(h))
  it('leaves out only cases the harness has, each with its reason', () => {
    const names = new Set(cases.map((c) => c.name))
    for (const [name, why] of Object.entries(NEST_LEAVES_OUT)) {
      expect(names.has(name), name).toBe(true)
      expect(why.length, name).toBeGreaterThan(0)
    }
  })
})
