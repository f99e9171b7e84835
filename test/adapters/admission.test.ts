// admissionControl() on Express, Koa, Hono and Fastify over real HTTP: the same cases against each adapter.
import { createServer, type Server } from 'node:http'
import { createAdaptorServer } from '@hono/node-server'
import { THROTTLING_MODE } from '@sluice/core'
import * as sluiceExpress from '@sluice/express'
import * as sluiceFastify from '@sluice/fastify'
import * as sluiceHono from '@sluice/hono'
import * as sluiceKoa from '@sluice/koa'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'

const T0 = 1_800_000_000_000
const MINUTE = 60_000

/** Options every adapter accepts, with the key read from the Authorization header. */
interface Neutral {
  maxActive: number
  now: () => number
  window?: string
  slots?: number
  byToken?: boolean
  /** Answer refusals with { custom: true } and status 503. */
  custom?: boolean
}

interface Reply {
  status: number
  headers: Record<string, string>
  body: Record<string, unknown>
}

type Build = (options: Neutral) => Server

const token = (value: string | undefined) => (value ?? '').replace(/^Bearer /, '')

/** Servers whose app is still loading its plugins (Fastify): requests wait for it. */
const loading = new WeakMap<Server, PromiseLike<unknown>>()

const builds: Record<'express' | 'koa' | 'hono' | 'fastify', Build> = {
  express(options) {
    const app = express()
    app.use(
      sluiceExpress.admissionControl({
        maxActive: options.maxActive,
        now: options.now,
        window: options.window,
        slots: options.slots,
        ...(options.byToken && { key: (req) => token(req.get('authorization')) }),
        ...(options.custom && { onThrottled: (_req, res) => void res.status(503).json({ custom: true }) }),
      }),
    )
    app.get('/', (req, res) => void res.json({ admission: req.admission }))
    return createServer(app)
  },
  koa(options) {
    const app = new Koa()
    app.use(
      sluiceKoa.admissionControl({
        maxActive: options.maxActive,
        now: options.now,
        window: options.window,
        slots: options.slots,
        ...(options.byToken && { key: (ctx) => token(ctx.get('authorization')) }),
        ...(options.custom && {
          onThrottled: (ctx) => {
            ctx.status = 503
            ctx.body = { custom: true }
          },
        }),
      }),
    )
    app.use((ctx) => {
      ctx.body = { admission: ctx.state.admission }
    })
    return createServer(app.callback())
  },
  hono(options) {
    const app = new Hono<{ Variables: sluiceHono.AdmissionVariables }>()
    app.use(
      sluiceHono.admissionControl({
        maxActive: options.maxActive,
        now: options.now,
        window: options.window,
        slots: options.slots,
        ...(options.byToken && { key: (c) => token(c.req.header('authorization')) }),
        ...(options.custom && { onThrottled: (c) => c.json({ custom: true }, 503) }),
      }),
    )
    app.get('/', (c) => c.json({ admission: c.get('admission') }))
    return createAdaptorServer({ fetch: app.fetch }) as Server
  },
  fastify(options) {
    const app = Fastify()
    void app.register(sluiceFastify.admissionControl, {
      maxActive: options.maxActive,
      now: options.now,
      window: options.window,
      slots: options.slots,
      ...(options.byToken && { key: (request) => token(request.headers.authorization) }),
      ...(options.custom && { onThrottled: (_request, reply) => reply.code(503).send({ custom: true }) }),
    })
    // Declared in a plugin registered after it, so the route is declared once admissionControl has loaded.
    void app.register(async (routes) => {
      routes.get('/', async (request) => ({ admission: request.admission }))
    })
    loading.set(app.server, app.ready())
    return app.server
  },
}

const servers: Server[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

function start(build: Build, options: Omit<Neutral, 'now'>) {
  const clock = { now: T0 }
  const server = build({ ...options, now: () => clock.now })
  servers.push(server)
  const get = async (user?: string): Promise<Reply> => {
    await loading.get(server)
    const res = await request(server)
      .get('/')
      .set(user === undefined ? {} : { authorization: `Bearer ${user}` })
    return { status: res.status, headers: res.headers as Record<string, string>, body: JSON.parse(res.text) }
  }
  return { clock, get }
}

describe.each(Object.entries(builds))('admissionControl on %s', (_name, build) => {
  it('lets everyone through below maxActive and says who is known', async () => {
    const { get } = start(build, { maxActive: 5, byToken: true })
    for (let i = 0; i < 5; i++) {
      const reply = await get(`user-${i}`)
      expect(reply.status).toBe(200)
      expect(reply.body.admission).toEqual({ throttling: false, active: i, known: false })
    }
    expect((await get('user-2')).body.admission).toEqual({ throttling: false, active: 5, known: true })
  })

  it('above maxActive serves known clients and refuses new ones with 429, Retry-After and a problem body', async () => {
    const { get } = start(build, { maxActive: 5, byToken: true })
    for (let i = 0; i < 6; i++) expect((await get(`user-${i}`)).status).toBe(200)
    const known = await get('user-1')
    expect(known.status).toBe(200)
    expect(known.body.admission).toEqual({ throttling: true, active: 6, known: true })

    const refused = await get('newcomer')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBe('60')
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(refused.body).toMatchObject({ type: THROTTLING_MODE, status: 429, active: 6, 'max-active': 5 })

    // Retrying does not make a refused client active.
    for (let i = 0; i < 3; i++) expect((await get('newcomer')).status).toBe(429)
    expect((await get('user-5')).status).toBe(200)
  })

  it('ends throttling mode once activity drops, and admits newcomers again', async () => {
    const { clock, get } = start(build, { maxActive: 5, byToken: true, window: '10min', slots: 10 })
    for (let i = 0; i < 6; i++) await get(`user-${i}`)
    expect((await get('newcomer')).status).toBe(429)
    // Two keep coming back; the others stop.
    for (let minute = 1; minute <= 10; minute++) {
      clock.now = T0 + minute * MINUTE
      expect((await get('user-0')).status).toBe(200)
      expect((await get('user-1')).status).toBe(200)
    }
    const back = await get('newcomer')
    expect(back.status).toBe(200)
    expect(back.body.admission).toEqual({ throttling: false, active: 2, known: false })
  })

  it('keys by client IP by default', async () => {
    const { get } = start(build, { maxActive: 1 })
    expect((await get('a')).status).toBe(200)
    // Another token from the same address is the same client.
    expect((await get('b')).body.admission).toEqual({ throttling: false, active: 1, known: true })
  })

  it('hands the refusal to onThrottled', async () => {
    const { get } = start(build, { maxActive: 1, byToken: true, custom: true })
    await get('a')
    await get('b')
    const refused = await get('c')
    expect(refused.status).toBe(503)
    expect(refused.body).toEqual({ custom: true })
    expect(refused.headers['retry-after']).toBe('60')
  })
})
