import { describe, expect, it } from 'vitest'
import { ActiveClients } from '../admission/active-clients.js'
import { ConfigError } from '../diagnostics/errors.js'
import type { Awaitable } from '../stores/contract.js'
import {
  type AdmissionControlOptions,
  type AdmissionEvent,
  type AdmissionPlan,
  createAdmissionHandler,
  THROTTLING_MODE,
} from './admission.js'
import type { Adapter } from './common-options.js'

type Args = [token: string]
const adapter: Adapter<Args> = { name: 'test', addressSource: 'token', address: (token) => token, status: () => 200 }
const T0 = 1_800_000_000_000
const MINUTE = 60_000

function setup(options: Partial<AdmissionControlOptions<Args>> = {}) {
  const clock = { now: T0 }
  const handler = createAdmissionHandler<Args, unknown>(
    { maxActive: 10, key: (token) => token, now: () => clock.now, ...options },
    adapter,
  )
  const plan = async (token: string) => (await handler.plan(token)) as Exclude<AdmissionPlan<unknown>, { kind: 'skip' }>
  return { clock, handler, plan }
}

async function fill(plan: (token: string) => Promise<{ kind: string }>, from: number, count: number) {
  for (let i = from; i < from + count; i++) expect((await plan(`user-${i}`)).kind).toBe('continue')
}

describe('createAdmissionHandler', () => {
  it('admits everyone up to maxActive, then only known clients', async () => {
    const { plan, handler } = setup()
    await fill(plan, 0, 11)
    expect(handler.throttling).toBe(false)
    const known = await plan('user-3')
    expect(known).toMatchObject({ kind: 'continue', state: { throttling: true, known: true } })
    const stranger = await plan('stranger')
    expect(stranger.kind).toBe('deny')
    if (stranger.kind !== 'deny') return
    expect(stranger.status).toBe(429)
    expect(stranger.state).toMatchObject({ throttling: true, known: false })
    expect(stranger.headers).toEqual([{ name: 'Retry-After', value: '60', append: false }])
    const body = JSON.parse((stranger.response as { text: string }).text)
    expect(body).toMatchObject({ type: THROTTLING_MODE, status: 429, 'max-active': 10, active: 11 })
    // Refused clients are not recorded: retrying does not make one known.
    expect((await plan('stranger')).kind).toBe('deny')
    expect(handler.clients.has('stranger')).toBe(false)
  })

  it('leaves throttling mode only below resumeBelow, once clients age out of the window', async () => {
    const { plan, clock, handler } = setup({ maxActive: 10, slots: 3, window: '3min' })
    await fill(plan, 0, 6)
    clock.now += MINUTE
    await fill(plan, 6, 5)
    expect((await plan('new-1')).kind).toBe('deny')
    // The first six leave the window: 5 active, below 9 (90 % of 10): newcomers pass again.
    clock.now += 2 * MINUTE
    const back = await plan('new-1')
    expect(back).toMatchObject({ kind: 'continue', state: { throttling: false, known: false } })
    expect(handler.throttling).toBe(false)
  })

  it('keeps throttling between resumeBelow and maxActive', async () => {
    const { plan, handler } = setup({ maxActive: 10, resumeBelow: 5 })
    await fill(plan, 0, 11)
    expect((await plan('x')).kind).toBe('deny')
    expect(handler.throttling).toBe(true)
  })

  it('lets every request through in dryRun, without recording refused ones', async () => {
    const { plan, handler } = setup({ dryRun: true })
    await fill(plan, 0, 11)
    expect(await plan('x')).toMatchObject({ kind: 'continue', state: { throttling: true, known: false } })
    expect(handler.clients.has('x')).toBe(false)
  })

  it('reports decisions and mode changes to observe, and ignores a throwing observer', async () => {
    const events: AdmissionEvent[] = []
    const { plan } = setup({
      maxActive: 2,
      observe: (event) => {
        events.push(event)
        throw new Error('observer bug')
      },
    })
    await fill(plan, 0, 3)
    expect((await plan('new')).kind).toBe('deny')
    expect(events.filter((e) => e.type === 'admission-mode')).toEqual([
      { type: 'admission-mode', throttling: true, active: 3, maxActive: 2 },
    ])
    expect(events.at(-1)).toMatchObject({ type: 'admission', key: 'new', admitted: false, known: false })
  })

  it('uses onThrottled, message and retryAfter', async () => {
    const { plan } = setup({
      maxActive: 1,
      retryAfter: '5m',
      message: (_token: string, info: { key: string; retryAfter: number }) => ({ wait: info.retryAfter }),
    })
    await fill(plan, 0, 2)
    const denied = await plan('late')
    expect(denied.kind === 'deny' && denied.headers[0]?.value).toBe('300')
    expect(denied.kind === 'deny' && (denied.response as { text: string }).text).toBe('{"wait":300000}')
  })

  it('attaches the sync to its clients once', () => {
    const attached: ActiveClients[] = []
    const { handler } = setup({ sync: { attach: (clients) => void attached.push(clients) } })
    expect(attached).toEqual([handler.clients])
  })

  it.each<[Record<string, unknown>, string]>([
    [{}, 'maxActive'],
    [{ maxActive: 0 }, 'maxActive'],
    [{ maxActive: 2.5 }, 'maxActive'],
    [{ maxActive: 10, resumeBelow: 11 }, 'resumeBelow'],
    [{ maxActive: 10, window: 'soon' }, 'window'],
    [{ maxActive: 10, slots: 0 }, 'slots'],
    [{ maxActive: 10, retryAfter: -1 }, 'retryAfter'],
    [{ maxActive: 10, sync: {} }, 'sync'],
    [{ maxActive: 10, observe: 'log' }, 'observe'],
    [{ maxActive: 10, onLimited: () => {} }, 'onLimited'],
    [{ maxActive: 10, limits: ['10/s'] }, 'limits'],
    [{ maxActive: 10, statusCode: 200 }, 'statusCode'],
    [{ maxActive: 10, clients: {} }, 'clients'],
    [{ maxActive: 10, clients: new ActiveClients({ capacity: 10 }), slots: 5 }, 'slots'],
  ])('rejects %j naming %s', (options, field) => {
    const build = () => createAdmissionHandler(options as never, adapter)
    expect(build).toThrow(ConfigError)
    expect(build).toThrow(expect.objectContaining({ field }))
  })

  it('plans synchronously with a synchronous key', () => {
    const { handler } = setup()
    const planned: Awaitable<AdmissionPlan<unknown>> = handler.plan('a')
    expect(planned).toMatchObject({ kind: 'continue' })
  })
})
