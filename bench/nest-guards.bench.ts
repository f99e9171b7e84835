// What each rate-limit guard adds to a Nest hello world, per platform, measured in one process:
// the same apps as `bench:http`'s Nest rows (bench/http/nest.ts), driven by light-my-request (the
// whole Nest pipeline, router to serialised response, without sockets), so the figure is Nest's
// and the guard's CPU alone. Apps are measured in turns: each round measures the no-guard app
// before the first variant, between every two and after the last, and each variant is compared
// with the mean of the no-guard samples on either side; ratios and differences are medians over
// rounds. CPU time (process.cpuUsage) per request; the requests carry one of 1 024 client ids.
//
//   pnpm bench:nest-guards   # env: BENCH_ROUNDS=7 BENCH_REQUESTS=2000 BENCH_PLATFORMS=express,fastify
import type { INestApplication } from '@nestjs/common'
import inject from 'light-my-request'
import { CLIENT_HEADER, CLIENTS, VARIANT_LABELS, type Variant } from './http/config.js'
import { createApp, type Platform } from './http/nest.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000)
const PLATFORMS = (process.env.BENCH_PLATFORMS?.split(',') ?? ['express', 'fastify']) as Platform[]
const VARIANTS: Variant[] = ['headers', 'sluice-1', 'sluice-2', 'ntl-1', 'ntl-2']

type Send = (client: number) => Promise<number>

function sender(platform: Platform, app: INestApplication): Send {
  const instance = app.getHttpAdapter().getInstance()
  const headers = (client: number) => ({ [CLIENT_HEADER]: String(client) })
  if (platform === 'fastify') {
    return async (client) => (await instance.inject({ method: 'GET', url: '/', headers: headers(client) })).statusCode
  }
  return async (client) => (await inject(instance, { method: 'GET', url: '/', headers: headers(client) })).statusCode
}

let next = 0
/** CPU µs per request over `n` requests, each awaited before the next. */
async function sample(send: Send, n: number): Promise<number> {
  const before = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    const status = await send(next++ % CLIENTS)
    if (status !== 200) throw new Error(`status ${status}`)
  }
  const used = process.cpuUsage(before)
  return (used.user + used.system) / n
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

const rows: string[] = []
for (const platform of PLATFORMS) {
  const none = sender(platform, await createApp(platform, 'none'))
  const targets = new Map<Variant, Send>()
  for (const variant of VARIANTS) targets.set(variant, sender(platform, await createApp(platform, variant)))
  for (const send of [none, ...targets.values()]) await sample(send, 3000)
  const ratios = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]))
  const extra = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]))
  const base: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length] as Variant)
    let before = await sample(none, REQUESTS)
    for (const variant of order) {
      const cost = await sample(targets.get(variant) as Send, REQUESTS)
      const after = await sample(none, REQUESTS)
      const reference = (before + after) / 2
      base.push(reference)
      ratios.get(variant)?.push(cost / reference)
      extra.get(variant)?.push(cost - reference)
      before = after
    }
    console.error(`${platform} round ${round + 1}/${ROUNDS}`)
  }
  const noneCost = median(base)
  rows.push(`| ${platform} | none | ${noneCost.toFixed(1)} | 0 | 1 |`)
  for (const variant of VARIANTS) {
    const r = median(ratios.get(variant) as number[])
    const d = median(extra.get(variant) as number[])
    const label = variant === 'headers' ? 'reference: a guard that sets 2 constant headers' : VARIANT_LABELS[variant]
    rows.push(`| ${platform} | ${label} | ${(noneCost * r).toFixed(1)} | ${d.toFixed(1)} | ${r.toFixed(3)} |`)
  }
}

console.log(`node ${process.version}, ${ROUNDS} rounds of ${REQUESTS} requests a sample, medians of paired comparisons
| platform | guard | CPU µs/request | − none | ÷ none |
|---|---|---:|---:|---:|
${rows.join('\n')}`)
process.exit(0)
