// What @sluice/fastify adds to the adapter harness's cases (test/adapters, run on Fastify there):
// the plugins' registration, route config, groups, hooks, error handler and bad input, on
// Fastify 5 and 4.
import { ConfigError, type Decision, MemoryStore } from '@sluice/core'
import { adaptiveConcurrency, admissionControl, concurrencyLimit, rateLimit } from '@sluice/fastify'
import Fastify, { type FastifyInstance } from 'fastify'
import Fastify4 from 'fastify4'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { until } from '../support/wait.js'

/** Both majors, each made to look like Fastify 5 to the compiler (the plugin declares both). */
const majors = [
  ['Fastify 5', () => Fastify()],
  ['Fastify 4', () => Fastify4() as unknown as FastifyInstance],
] as const

const statuses = async (app: FastifyInstance, n: number, url = '/', headers: Record<string, string> = {}) => {
  const out: number[] = []
  for (let i = 0; i < n; i++) out.push((await app.inject({ url, headers })).statusCode)
  return out
}

describe.each(majors)('@sluice/fastify on %s', (_, make) => {
  it('limits every route with draft-11 headers and a problem body; request.rateLimit holds the decision', async () => {
    const app = make()
    await app.register(rateLimit, { limits: ['2/min'] })
    app.get('/', async (request) => {
      expectTypeOf(request.rateLimit).toEqualTypeOf<Decision | undefined>()
      return { remaining: request.rateLimit?.remaining }
    })
    const first = await app.inject('/')
    expect(first.json()).toEqual({ remaining: 1 })
    expect(first.headers['ratelimit-policy']).toBe('"2-per-1m";q=2;w=60')
    await app.inject('/')
    const denied = await app.inject('/')
    expect(denied.statusCode).toBe(429)
    expect(denied.headers['content-type']).toBe('application/problem+json')
    expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0)
    expect(denied.json()).toMatchObject({ status: 429, 'violated-policies': ['2-per-1m'] })
  })

  it("routes naming one namespace share a count; a route's own limits otherwise count apart", async () => {
    const app = make()
    await app.register(rateLimit, { global: false })
    const auth = { rateLimit: { limits: ['2/min'], namespace: 'auth' } }
    app.post('/login', { config: auth }, async () => 'in')
    app.post('/signup', { config: auth }, async () => 'up')
    app.get('/a', { config: { rateLimit: { limits: ['1/min'] } } }, async () => 'a')
    app.get('/b', { config: { rateLimit: { limits: ['1/min'] } } }, async () => 'b')
    expect((await app.inject({ method: 'POST', url: '/login' })).statusCode).toBe(200)
    expect((await app.inject({ method: 'POST', url: '/signup' })).statusCode).toBe(200)
    expect((await app.inject({ method: 'POST', url: '/login' })).statusCode).toBe(429)
    expect((await app.inject({ method: 'POST', url: '/signup' })).statusCode).toBe(429)
    expect(await statuses(app, 2, '/a')).toEqual([200, 429])
    expect(await statuses(app, 2, '/b')).toEqual([200, 429])
  })

  it("app.rateLimit() without options is the scope's own limit: one count, for a not-found handler too", async () => {
    const app = make()
    await app.register(rateLimit, { limits: ['2/min'] })
    app.get('/', async () => 'ok')
    app.setNotFoundHandler({ preHandler: app.rateLimit() }, (_request, reply) => {
      reply.code(404).send('nothing here')
    })
    expect((await app.inject('/')).statusCode).toBe(200)
    expect((await app.inject('/guess')).statusCode).toBe(404)
    expect((await app.inject('/guess-again')).statusCode).toBe(429)
    expect((await app.inject('/')).statusCode).toBe(429)
  })

  it("an onLimited that throws reaches Fastify's default error handler, which keeps the rate-limit headers", async () => {
    const app = make()
    await app.register(rateLimit, {
      limits: ['1/min'],
      onLimited: () => {
        throw Object.assign(new Error('slow down'), { statusCode: 429 })
      },
    })
    app.get('/', async () => 'ok')
    await app.inject('/')
    const denied = await app.inject('/')
    expect(denied.statusCode).toBe(429)
    expect(denied.json()).toMatchObject({ statusCode: 429, message: 'slow down' })
    expect(denied.headers.ratelimit).toMatch(/^"1-per-1m";r=0;t=\d+$/)
    expect(denied.headers['retry-after']).toBeDefined()
  })

  it('concurrencyLimit: refuses beyond the limit while a request is in flight; a route may opt out', async () => {
    const app = make()
    await app.register(concurrencyLimit, { limit: 1 })
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered = (): void => {}
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    app.get('/slow', async () => {
      entered()
      await gate
      return 'done'
    })
    app.get('/fast', async () => 'fast')
    app.get('/health', { config: { concurrencyLimit: false } }, async () => 'up')
    const slow = app.inject('/slow')
    await inside
    const refused = await app.inject('/fast')
    expect(refused.statusCode).toBe(429)
    expect(refused.headers['retry-after']).toBe('1')
    expect((await app.inject('/health')).statusCode).toBe(200)
    release()
    expect((await slow).statusCode).toBe(200)
    expect((await app.inject('/fast')).statusCode).toBe(200)
  })

  it('adaptiveConcurrency: a waiter is admitted when a slot frees; past the queue 503; exempt and own-limit routes', async () => {
    const app = make()
    const pinned = { min: 1, max: 1, initial: 1, probe: false as const }
    await app.register(adaptiveConcurrency, { ...pinned, queue: { size: 1, maxWait: '10s' }, name: 'service' })
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered = (): void => {}
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    app.get('/slow', async () => {
      entered()
      await gate
      return 'done'
    })
    app.get('/fast', async () => 'fast')
    app.get('/health', { config: { adaptiveConcurrency: false } }, async () => 'up')
    app.get('/own', { config: { adaptiveConcurrency: { name: 'own' } } }, async () => 'own')
    const { limiter } = app.adaptiveConcurrency()
    expect(limiter.name).toBe('service')
    const slow = app.inject('/slow')
    await inside
    expect(limiter.inflight).toBe(1)
    const waiting = app.inject('/fast')
    await until(() => limiter.queued > 0, { every: 1 })
    const refused = await app.inject('/fast')
    expect(refused.statusCode).toBe(503)
    expect(refused.headers['retry-after']).toBe('1')
    expect(refused.headers['content-type']).toBe('application/problem+json')
    expect(refused.json()).toMatchObject({ status: 503, title: 'Service Unavailable' })
    expect((await app.inject('/health')).statusCode).toBe(200)
    expect((await app.inject('/own')).statusCode).toBe(200)
    release()
    expect((await slow).statusCode).toBe(200)
    const admitted = await waiting
    expect(admitted.statusCode).toBe(200)
    expect(admitted.body).toBe('fast')
    expect(limiter.inflight).toBe(0)
    expect(limiter.stats().classes.default?.refused).toBe(1)
  })

  it('admissionControl: past maxActive clients only known ones are served; request.admission says so', async () => {
    const app = make()
    await app.register(admissionControl, {
      maxActive: 2,
      resumeBelow: 1,
      key: (request) => String(request.headers['x-user']),
    })
    app.get('/', async (request) => ({ throttling: request.admission?.throttling }))
    const as = (user: string) => app.inject({ url: '/', headers: { 'x-user': user } })
    for (const user of ['a', 'b', 'c']) expect((await as(user)).statusCode).toBe(200)
    expect((await as('d')).statusCode).toBe(429)
    const known = await as('a')
    expect(known.statusCode).toBe(200)
    expect(known.json()).toEqual({ throttling: true })
  })
})

describe('@sluice/fastify bad input, refused at startup', () => {
  const registering = async (options: object, plugin: typeof rateLimit = rateLimit) => {
    const app = Fastify()
    await app.register(plugin, options as never)
  }

  it('a plugin registered twice on one scope (a child scope may register its own)', async () => {
    const app = Fastify()
    await app.register(concurrencyLimit, { limit: 5 })
    await expect(app.register(concurrencyLimit, { limit: 5 })).rejects.toThrow(
      /^concurrencyLimit is registered twice on one scope: register it once/,
    )
    const nested = Fastify()
    await nested.register(rateLimit, { limits: ['10/min'] })
    await nested.register(async (child) => {
      await child.register(rateLimit, { limits: ['1/min'] })
      child.get('/inner', async () => 'inner')
    })
    nested.get('/outer', async () => 'outer')
    expect(await statuses(nested, 2, '/inner')).toEqual([200, 429])
    expect(await statuses(nested, 2, '/outer')).toEqual([200, 200])
  })

  it('global and hook: their values, named', async () => {
    await expect(registering({ limits: ['1/s'], global: 'yes' })).rejects.toThrow(
      /^global must be true or false, got "yes"$/,
    )
    await expect(registering({ limits: ['1/s'], hook: 'preParsing' })).rejects.toThrow(
      /^hook must be one of 'onRequest', 'preValidation', 'preHandler' \(rateLimit\), got "preParsing"$/,
    )
  })

  it("@fastify/rate-limit's options, each answered with what to write instead", async () => {
    const hints: [string, unknown, RegExp][] = [
      ['max', 100, /^max is not an option of rateLimit\(\): set the limit in limits/],
      ['timeWindow', 60_000, /^timeWindow is not an option of rateLimit\(\): set the window in limits/],
      ['groupId', 'auth', /^groupId is not an option of rateLimit\(\): routes that share one count name one namespace/],
      ['keyGenerator', () => 'k', /^keyGenerator is not an option of rateLimit\(\): use key/],
      ['allowList', ['127.0.0.1'], /^allowList is not an option of rateLimit\(\): use skip/],
      ['errorResponseBuilder', () => ({}), /^errorResponseBuilder is not an option of rateLimit\(\): use message/],
      ['skipOnError', true, /^skipOnError is not an option of rateLimit\(\): use onStoreError: 'allow'/],
      ['enableDraftSpec', true, /^enableDraftSpec is not an option of rateLimit\(\): use headers: 'draft-6'/],
      ['ban', 3, /^ban is not an option of rateLimit\(\): use blockFor in a policy/],
      ['redis', {}, /^redis is not an option of rateLimit\(\): use store: new RedisStore/],
      ['nameSpace', 'rl-', /^nameSpace is not an option of rateLimit\(\): use prefix on a RedisStore/],
    ]
    for (const [field, value, message] of hints) {
      const error = await registering({ limits: ['1/s'], [field]: value }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ConfigError)
      expect((error as ConfigError).field).toBe(field)
      expect((error as Error).message).toMatch(message)
    }
  })

  it("a route's config: not an object or false, or an unknown option, names the route and the field when the route is declared", async () => {
    const app = Fastify()
    await app.register(rateLimit, { limits: ['10/min'] })
    expect(() => app.get('/x', { config: { rateLimit: true as never } }, async () => 'x')).toThrow(
      /^config\.rateLimit of GET \/x must be an object of options, or false, got true$/,
    )
    expect(() => app.post('/y', { config: { rateLimit: { max: 5 } as never } }, async () => 'y')).toThrow(
      /^POST \/y: config\.rateLimit\.max is not an option of rateLimit\(\): set the limit in limits/,
    )
    expect(() => app.get('/z', { config: { rateLimit: { hook: 'onSend' as never } } }, async () => 'z')).toThrow(
      /^GET \/z: config\.rateLimit\.hook must be one of/,
    )
  })

  it('global: false with no limits: a route that asks and brings none is refused when declared', async () => {
    const app = Fastify()
    await app.register(rateLimit, { global: false, store: new MemoryStore() })
    expect(() => app.get('/', { config: { rateLimit: {} } }, async () => 'x')).toThrow(
      /^GET \/: config\.rateLimit\.limits are required/,
    )
  })

  it("adaptiveConcurrency: a route's bad bounds name the route when declared; a shared limiter refuses its own options", async () => {
    const app = Fastify()
    await app.register(adaptiveConcurrency, {})
    expect(() => app.get('/x', { config: { adaptiveConcurrency: { min: 9, max: 3 } } }, async () => 'x')).toThrow(
      /^GET \/x: config\.adaptiveConcurrency\.min must not be above max \(3\), got 9/,
    )
    const shared = Fastify()
    await shared.register(adaptiveConcurrency, { limiter: app.adaptiveConcurrency().limiter })
    expect(() => shared.adaptiveConcurrency({ max: 5 })).toThrow(/^max belongs to the limiter/)
    await expect(registering({ key: () => 'k' }, adaptiveConcurrency as never)).rejects.toThrow(
      /^key is not an option of adaptiveConcurrency\(\)/,
    )
  })

  it('app.rateLimit(options) checks its options when called', async () => {
    const app = Fastify()
    await app.register(rateLimit, { limits: ['10/min'] })
    expect(() => app.rateLimit({ timeWindow: 5 } as never)).toThrow(/^timeWindow is not an option of rateLimit\(\)/)
  })
})
