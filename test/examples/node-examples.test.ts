// Starts each Node example as its own process (from source, through tsx) on a port the OS picks,
// and checks that its login route ends in a standards-shaped 429.
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const examplesDir = fileURLToPath(new URL('../../examples/', import.meta.url))
const STARTUP_MS = 15_000
/** The login route allows 1 a second, so the second attempt is denied; a few more are slack. */
const MAX_LOGIN_ATTEMPTS = 6
/** The examples' demo account, demo:sluice, as HTTP Basic auth. */
const DEMO_LOGIN = `Basic ${btoa('demo:sluice')}`

interface Running {
  child: ChildProcess
  url: string
}

/** Same as `tsx --conditions=source index.ts`, as one process whose PID is the server's. */
function startExample(name: string): Promise<Running> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', 'index.ts'], {
    cwd: `${examplesDir}${name}`,
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => fail(`did not print its URL within ${STARTUP_MS} ms`), STARTUP_MS)
    function fail(reason: string) {
      clearTimeout(timer)
      void stop(child)
      reject(new Error(`examples/${name} ${reason}; output:\n${output}`))
    }
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/localhost:\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        child.off('exit', onExit)
        resolve({ child, url: match[1]! })
      }
    }
    const onExit = (code: number | null, signal: string | null) => fail(`exited early (code ${code}, signal ${signal})`)
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', onExit)
  })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  process.kill(child.pid!, 'SIGTERM')
  const timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

describe.each(['express', 'koa', 'hono-node', 'fastify', 'nestjs'])('examples/%s', (name) => {
  let example: Running | undefined
  let url = ''
  beforeAll(async () => {
    example = await startExample(name)
    url = example.url
  }, STARTUP_MS + 5000)
  afterAll(async () => {
    if (example) await stop(example.child)
  })

  it('serves, and counts only failed logins, ending in a 429 with its headers', async () => {
    expect((await fetch(`${url}/`)).status).toBe(200)

    // Successful logins are given back (skipSuccessfulRequests): back to back, each sees the full quota.
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${url}/login`, { method: 'POST', headers: { authorization: DEMO_LOGIN } })
      expect(response.status).toBe(200)
      expect(response.headers.get('ratelimit')).toMatch(/^"5-per-1m";r=4;t=\d+, "1-per-1s";r=0;t=\d+$/)
      await response.arrayBuffer()
    }

    const statuses: number[] = []
    let denied: Response | undefined
    while (!denied && statuses.length < MAX_LOGIN_ATTEMPTS) {
      const response = await fetch(`${url}/login`, { method: 'POST' })
      statuses.push(response.status)
      if (response.status === 429) denied = response
      else await response.arrayBuffer()
    }
    expect(statuses[0]).toBe(401)
    expect(denied, `no 429 in ${statuses.join(', ')}`).toBeDefined()
    const headers = denied!.headers
    expect(headers.get('ratelimit-policy')).toBe('"5-per-1m";q=5;w=60, "1-per-1s";q=1;w=1')
    expect(headers.get('ratelimit')).toMatch(/^"5-per-1m";r=[0-4];t=\d+, "1-per-1s";r=0;t=\d+$/)
    const retryAfter = Number(headers.get('retry-after'))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const problem = (await denied!.json()) as Record<string, unknown>
    expect(problem).toMatchObject({ status: 429 })
    expect(problem['violated-policies']).toContain('1-per-1s')
  })

  it('charges /api/items by the number of items asked for', async () => {
    const first = (await (await fetch(`${url}/api/items?items=50`)).json()) as { items: unknown[]; quotaLeft: number }
    expect(first.items).toHaveLength(50)
    expect(first.quotaLeft).toBe(150)
    const second = (await (await fetch(`${url}/api/items?items=3`)).json()) as { quotaLeft: number }
    expect(second.quotaLeft).toBeGreaterThanOrEqual(147)
    expect(second.quotaLeft).toBeLessThan(150)
  })
})

/** Issue 13, defect 8: a port in use gives a clear message and exit code 1, never a TypeError. */
describe.each(['express', 'koa', 'hono-node', 'fastify', 'nestjs'])('examples/%s on a port in use', (name) => {
  it(
    'says EADDRINUSE and how to pick another PORT, and exits 1',
    async () => {
      const blocker = createServer()
      await new Promise<void>((resolve) => blocker.listen(0, resolve))
      const { port } = blocker.address() as { port: number }
      try {
        const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', 'index.ts'], {
          cwd: `${examplesDir}${name}`,
          env: { ...process.env, PORT: String(port) },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let output = ''
        child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
        child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
        const timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), STARTUP_MS)
        const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
        clearTimeout(timer)
        expect(output).toMatch(
          new RegExp(`port ${port} is already in use \\(EADDRINUSE\\).*PORT=${port + 1} pnpm start`),
        )
        expect(output).not.toMatch(/TypeError/)
        expect(code).toBe(1)
      } finally {
        await new Promise((resolve) => blocker.close(resolve))
      }
    },
    STARTUP_MS + 5000,
  )
})

describe('examples/ai-gateway', () => {
  let example: Running | undefined
  beforeAll(async () => {
    example = await startExample('ai-gateway')
  }, STARTUP_MS + 5000)
  afterAll(async () => {
    if (example) await stop(example.child)
  })

  it('serves a completion charged by its tokens, and the usage it left', async () => {
    // A key of its own: with REDIS_URL set the example keeps its quota in Redis across runs.
    const apiKey = `key-${Math.random().toString(36).slice(2)}`
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }
    const answer = await fetch(`${example!.url}/v1/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ prompt: 'hello, answer in 100 tokens', max_tokens: 500 }),
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-tokens-remaining')).toBe('9893')
    await answer.arrayBuffer()
    const usage = await (await fetch(`${example!.url}/v1/usage`, { headers })).json()
    expect(usage).toMatchObject({ plan: 'free', used: 107, remaining: 9893 })
  })
})
