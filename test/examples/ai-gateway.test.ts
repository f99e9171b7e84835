// Drives examples/ai-gateway in process, on a MemoryStore with a clock the test moves and on a
// real Redis when REDIS_URL is set.
import { MemoryStore } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { RedisStore } from '@sluice/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { createGateway } from '../../examples/ai-gateway/app.js'

const redisUrl = process.env.REDIS_URL
const redis = redisUrl ? new Redis(redisUrl) : undefined
afterAll(async () => {
  await redis?.quit()
})

function gateway(store: Store) {
  const app = createGateway(store)
  const call = (path: string, apiKey: string, body?: unknown) =>
    app.request(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const usage = async (apiKey: string) =>
    (await (await call('/v1/usage', apiKey)).json()) as {
      plan: string
      limit: number
      used: number
      remaining: number
      resetsInSeconds: number
    }
  return { call, usage }
}

describe('examples/ai-gateway', () => {
  it('charges the tokens the model reports, shows usage beyond the quota after an overspent settle, keeps it across plan changes and resets on the 1st (UTC)', async () => {
    let now = Date.parse('2026-11-30T23:00:00Z')
    const { call, usage } = gateway(new MemoryStore({ now: () => now }))

    // A prompt of 27 characters is 7 tokens; 7 + 500 / 4 = 132 reserved; the model answers in 100: 107 charged.
    const answer = await call('/v1/completions', 'key-1', { prompt: 'hello, answer in 100 tokens', max_tokens: 500 })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-tokens-remaining')).toBe(String(10_000 - 107))
    expect(answer.headers.get('ratelimit')).toMatch(/^"requests";r=19;t=\d+$/)
    expect(await usage('key-1')).toMatchObject({ plan: 'free', used: 107, resetsInSeconds: 3600 })

    // Answers longer than estimated (4 000 reserved, 5 000 used) are charged in full, the second
    // beyond the quota (10 107 of 10 000): the next request waits for the month to turn.
    for (let i = 0; i < 2; i++) {
      const long = await call('/v1/completions', 'key-1', { prompt: 'x'.repeat(4 * 3_000), max_tokens: 4_000 })
      expect(long.status).toBe(200)
    }
    // The usage shows the overspend: 107 + 2 × 5 000 = 10 107 used of 10 000, none remaining.
    const used = 107 + 2 * 5_000
    expect(await usage('key-1')).toMatchObject({ plan: 'free', limit: 10_000, used, remaining: 0 })
    const denied = await call('/v1/completions', 'key-1', { prompt: 'one more', max_tokens: 10 })
    expect(denied.status).toBe(429)
    expect(denied.headers.get('retry-after')).toBe('3600')
    expect((await usage('key-1')).used).toBe(used)

    // Upgrading keeps the month's usage, the overspend included; downgrading leaves none until the
    // month turns, and the usage stays what was spent.
    expect(await (await call('/v1/plan', 'key-1', { plan: 'pro' })).json()).toMatchObject({
      plan: 'pro',
      limit: 1_000_000,
      used,
      remaining: 1_000_000 - used,
    })
    expect((await call('/v1/completions', 'key-1', { prompt: 'answer in 10 tokens', max_tokens: 10 })).status).toBe(200)
    expect(await usage('key-1')).toMatchObject({ plan: 'pro', used: used + 15, remaining: 1_000_000 - used - 15 })
    expect(await (await call('/v1/plan', 'key-1', { plan: 'free' })).json()).toMatchObject({
      plan: 'free',
      used: used + 15,
      remaining: 0,
    })

    now = Date.parse('2026-12-01T00:00:00Z')
    expect(await usage('key-1')).toMatchObject({ plan: 'free', used: 0, remaining: 10_000 })
    expect(await usage('key-2')).toMatchObject({ plan: 'free', used: 0 })
  })

  it('limits each API key to 20 requests a minute, and refuses requests without one', async () => {
    const { call } = gateway(new MemoryStore({ now: () => Date.parse('2026-11-26T12:00:00Z') }))
    const statuses: number[] = []
    for (let i = 0; i < 21; i++) {
      statuses.push((await call('/v1/completions', 'key-1', { prompt: 'hi', max_tokens: 1 })).status)
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(20)
    expect(statuses[20]).toBe(429)
    expect((await call('/v1/completions', 'key-2', { prompt: 'hi', max_tokens: 1 })).status).toBe(200)
    expect((await createGateway(new MemoryStore()).request('/v1/usage')).status).toBe(401)
    expect((await call('/v1/completions', 'key-3', { prompt: 42 })).status).toBe(400)
  })

  it.skipIf(redis === undefined)(
    'keeps the quota in Redis: usage, overspend included, survives a new gateway on the same Redis and a plan change',
    async () => {
      const prefix = `ai-gateway-test-${Math.random().toString(36).slice(2)}:`
      const first = gateway(new RedisStore({ client: redis as Redis, prefix }))
      const answer = await first.call('/v1/completions', 'key-r', { prompt: 'answer in 50 tokens', max_tokens: 200 })
      expect(answer.status).toBe(200)
      const second = gateway(new RedisStore({ client: redis as Redis, prefix }))
      expect(await second.usage('key-r')).toMatchObject({ used: 55 })
      // The upgrade reads the same stored count of the month under the pro quota.
      expect(await (await second.call('/v1/plan', 'key-r', { plan: 'pro' })).json()).toMatchObject({
        plan: 'pro',
        used: 55,
        remaining: 1_000_000 - 55,
      })
      // An overspent settle on Redis: 55 tokens, then 4 000 reserved and 5 000 used twice: 10 055 of free's 10 000.
      expect(
        (await second.call('/v1/completions', 'key-o', { prompt: 'answer in 50 tokens', max_tokens: 200 })).status,
      ).toBe(200)
      for (let i = 0; i < 2; i++) {
        const long = await second.call('/v1/completions', 'key-o', { prompt: 'x'.repeat(4 * 3_000), max_tokens: 4_000 })
        expect(long.status).toBe(200)
      }
      const overspent = 2 * 5_000 + 55
      expect(await first.usage('key-o')).toMatchObject({ plan: 'free', used: overspent, remaining: 0 })
      expect(await (await first.call('/v1/plan', 'key-o', { plan: 'pro' })).json()).toMatchObject({
        plan: 'pro',
        used: overspent,
        remaining: 1_000_000 - overspent,
      })
      const keys = await (redis as Redis).keys(`${prefix}*`)
      expect(keys.length).toBeGreaterThanOrEqual(2) // the month's token count and the minute's requests
    },
  )
})
