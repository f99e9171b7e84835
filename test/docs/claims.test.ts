// What the pages claim that no compiler checks: the statements issue 40 found stale, held to the
// source they describe.
import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { allSnippets, root } from './snippets.js'

const read = (file: string) => readFileSync(`${root}${file}`, 'utf8')
const packages = readdirSync(`${root}packages`).filter((dir) => !dir.startsWith('.'))
const ADAPTERS = ['express', 'koa', 'hono', 'fastify', 'nestjs']

/** The row of a Markdown table whose first cell is `` `name` ``. */
function row(page: string, name: string): string {
  const line = read(page)
    .split('\n')
    .find((l) => l.startsWith(`| \`${name}\``))
  if (line === undefined) throw new Error(`${page} has no row for ${name}`)
  return line
}

/** The classes of the source that declare `calendarPeriods = true`. */
function storesServingPeriods(): string[] {
  const names: string[] = []
  for (const [dir, file] of [
    ['core', 'stores/memory-store.ts'],
    ['redis', 'redis-store.ts'],
    ['redis', 'synced/synced-store.ts'],
    ['cloudflare', 'durable-object-store.ts'],
  ]) {
    const source = read(`packages/${dir}/src/${file}`)
    const declared = /export class (\w+)[\s\S]*?readonly calendarPeriods = true/.exec(source)
    if (declared) names.push(declared[1] as string)
  }
  return names
}

describe('pages that say what the code does', () => {
  it("the core README's period row names every store that serves calendar periods", () => {
    const stores = storesServingPeriods()
    expect(stores).toEqual(['MemoryStore', 'RedisStore', 'SyncedStore', 'DurableObjectStore'])
    for (const store of stores) expect(row('packages/core/README.md', 'period')).toContain(store)
  })

  it('no page says the SyncedStore is still to come', () => {
    for (const page of ['README.md', 'packages/core/README.md', 'packages/redis/README.md']) {
      expect(read(page)).not.toMatch(/SyncedStore`?, once it lands/)
    }
  })

  it('the migration guides map waiting for quota to limiter.acquire', () => {
    expect(row('docs/migrating-from-upstash-ratelimit.md', 'blockUntilReady(id, timeout)')).toMatch(
      /limiter\.acquire\(id, \{ maxWait: timeout \}\)/,
    )
    expect(row('docs/migrating-from-rate-limiter-flexible.md', 'RateLimiterQueue')).toMatch(/limiter\.acquire\(key/)
  })

  it("the SyncedStore's client takes what RedisStore's does", () => {
    const redisReadme = 'packages/redis/README.md'
    const [, synced] = read(redisReadme).split('## SyncedStore')
    const clientRow = synced?.split('\n').find((l) => l.startsWith('| `client`'))
    expect(clientRow).toMatch(/node-redis/)
    expect(clientRow).toMatch(/iovalkey/)
  })

  it.each(packages)("the %s README's install lines name every package its minimal app imports", (dir) => {
    const page = `packages/${dir}/README.md`
    const installed = new Set(
      [...read(page).matchAll(/^npm install (.*?)(?:#|$)/gm)].flatMap((m) => (m[1] as string).trim().split(/\s+/)),
    )
    const first = allSnippets().find((snippet) => snippet.file === page)
    const imported = [...(first?.code ?? '').matchAll(/from '([^']+)'/g)]
      .map((m) => m[1] as string)
      .filter((name) => !name.startsWith('node:') && !name.startsWith('.'))
      .map((name) => (name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : (name.split('/')[0] as string)))
      // Every package brings @sluice/core with it.
      .filter((name) => name !== '@sluice/core')
    expect(imported.filter((name) => !installed.has(name))).toEqual([])
  })

  it.each(ADAPTERS)("the %s README's headers section says why t can exceed w", (dir) => {
    const page = read(`packages/${dir}/README.md`)
    const example = /RateLimit: "100-per-1m";r=\d+;t=(\d+)/.exec(page)
    expect(Number(example?.[1])).toBeLessThanOrEqual(66) // a 1 min sliding window: w plus a tenth at most
    expect(page).toMatch(
      /`t` is the seconds until the policy's whole quota is back, which is not the window's length `w`/,
    )
  })
})
