import { createLimiter, type Limiter, type PolicyUsage } from '@sluice/core'
import type { Store } from '@sluice/core/store'
import { rateLimit } from '@sluice/hono'
import { type Context, Hono } from 'hono'
import { model, tokensOf, type Usage } from './model.js'

/** Tokens a month per plan, on the UTC calendar (the quota resets at 00:00 UTC on the 1st). */
export const PLANS = { free: 10_000, pro: 1_000_000 } as const
export type Plan = keyof typeof PLANS

/** What the routes after the API-key check read: the caller's key. */
type Env = { Variables: { apiKey: string } }

/** The most tokens one completion may ask for. */
const MAX_TOKENS = 4_000

/**
 * The gateway: per API key (`Authorization: Bearer <key>`), 20 requests a minute and a monthly
 * token quota by plan, each completion charged an estimate up front (the prompt and a quarter of
 * max_tokens) and settled to the tokens the model reports: the rest given back, or the overrun
 * charged even below zero, so that the next requests wait. `store` holds both limits (memory or Redis).
 */
export function createGateway(store: Store): Hono<Env> {
  // Plans kept in memory here; an app reads them from its database.
  const plans = new Map<string, Plan>()
  const planOf = (key: string): Plan => plans.get(key) ?? 'free'

  // One limiter per plan, on one store. Their policies share the name 'tokens', so they share the
  // month's stored count: a plan change reads the same usage (overspend included) against the new
  // quota, and the change is `plans.set(key, plan)` alone.
  const tokens = Object.fromEntries(
    Object.entries(PLANS).map(([plan, limit]) => [
      plan,
      createLimiter({ limits: { limit, period: 'month', name: 'tokens' }, store, namespace: 'tokens' }),
    ]),
  ) as Record<Plan, Limiter>
  const app = new Hono<Env>()

  app.use('/v1/*', async (c, next) => {
    const apiKey = /^Bearer (\S+)$/.exec(c.req.header('authorization') ?? '')?.[1]
    if (apiKey === undefined) return c.json({ error: 'send Authorization: Bearer <api key>' }, 401)
    c.set('apiKey', apiKey)
    await next()
  })

  app.post(
    '/v1/completions',
    rateLimit({ limits: { limit: 20, window: '1m', name: 'requests' }, store, key: (c) => c.get('apiKey') }),
    async (c) => {
      const apiKey = c.get('apiKey')
      const body = await c.req.json<{ prompt?: unknown; max_tokens?: unknown }>().catch(() => ({}))
      const { prompt, max_tokens: maxTokens = 256 } = body as { prompt?: unknown; max_tokens?: unknown }
      if (typeof prompt !== 'string' || !Number.isSafeInteger(maxTokens) || (maxTokens as number) < 1) {
        return c.json({ error: 'send { "prompt": string, "max_tokens": whole number }' }, 400)
      }
      const limiter = tokens[planOf(apiKey)]
      // The estimate: the prompt and a quarter of max_tokens (answers are mostly shorter than their cap).
      const estimate = tokensOf(prompt) + Math.ceil(Math.min(maxTokens as number, MAX_TOKENS) / 4)
      const reserved = Math.min(estimate, PLANS[planOf(apiKey)])
      const admittedAt = limiter.clock()
      const decision = await limiter.consume(apiKey, { cost: reserved })
      if (!decision.allowed) return quotaExceeded(c, decision.remaining, decision.retryAfter)

      const answer = await model.request('/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ prompt, max_tokens: maxTokens }),
      })
      const result = (await answer.json()) as { text: string; usage: Usage }
      const settled = await limiter.settle(apiKey, { reserved, actual: result.usage.total_tokens, admittedAt })
      c.header('x-tokens-remaining', String(settled.remaining))
      return c.json(result)
    },
  )

  app.get('/v1/usage', async (c) => c.json(await usageOf(c.get('apiKey'))))

  // A plan change keeps the month's usage: 4 000 used of free's 10 000 leaves 996 000 on pro.
  app.post('/v1/plan', async (c) => {
    const { plan } = (await c.req.json().catch(() => ({}))) as { plan?: unknown }
    if (typeof plan !== 'string' || !(plan in PLANS)) {
      return c.json({ error: `plan must be one of ${Object.keys(PLANS).join(', ')}` }, 400)
    }
    const apiKey = c.get('apiKey')
    plans.set(apiKey, plan as Plan)
    return c.json(await usageOf(apiKey))
  })

  /**
   * The month's tokens used (beyond the quota after an overspent settle, where `remaining` stops
   * at 0), and what the plan leaves: `limiter.usage`, which consumes nothing.
   */
  async function usageOf(apiKey: string) {
    const plan = planOf(apiKey)
    const [month] = await tokens[plan].usage(apiKey)
    const { limit, used, remaining, resetAfter } = month as PolicyUsage
    return { plan, limit, used, remaining, resetsInSeconds: Math.ceil(resetAfter / 1000) }
  }

  return app
}

function quotaExceeded(c: Context, remaining: number, retryAfterMs: number): Response {
  c.header('retry-after', String(Math.ceil(retryAfterMs / 1000)))
  return c.json({ error: 'monthly token quota exceeded', remaining }, 429)
}
