import { Hono } from 'hono'

/** What the fake model reports it used, as OpenAI-style APIs do, known only once it has answered. */
export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

/** About four characters a token, as a rough tokenizer would count. */
export function tokensOf(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4))
}

/**
 * A stand-in for a model endpoint: it answers with as many tokens as the prompt asks for
 * ("answer in N tokens"), else half of `max_tokens`, and reports its usage. Deterministic, so the
 * example's test can check what was charged.
 */
export const model = new Hono().post('/v1/completions', async (c) => {
  const { prompt, max_tokens } = await c.req.json<{ prompt: string; max_tokens: number }>()
  const asked = /answer in (\d+) tokens/.exec(prompt)
  const completion = Math.min(max_tokens, asked ? Number(asked[1]) : Math.ceil(max_tokens / 2))
  const usage: Usage = {
    prompt_tokens: tokensOf(prompt),
    completion_tokens: completion,
    total_tokens: tokensOf(prompt) + completion,
  }
  return c.json({ text: 'lorem '.repeat(completion).trim(), usage })
})
