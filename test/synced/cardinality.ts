import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Redis } from 'ioredis'
import { bundled } from '../support/bundle.js'
import { commandsBetween, parseCommandStats } from '../support/redis.js'
import type { CardinalityPlan } from './cardinality-worker.js'

const WORKER = fileURLToPath(new URL('./cardinality-worker.ts', import.meta.url))

/** A running cardinality worker: send it a command, get its one-line JSON answer. */
export interface CardinalityWorker {
  ask<T>(command: unknown): Promise<T>
  close(): Promise<void>
  readonly child: ChildProcess
}

export async function startCardinalityWorker(plan: CardinalityPlan): Promise<CardinalityWorker> {
  const child = spawn(process.execPath, [await bundled(WORKER), JSON.stringify(plan)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines: string[] = []
  const waiting: ((line: string) => void)[] = []
  let buffer = ''
  child.stdout?.on('data', (data: Buffer) => {
    buffer += data.toString()
    for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
      const line = buffer.slice(0, at)
      buffer = buffer.slice(at + 1)
      const next = waiting.shift()
      if (next === undefined) lines.push(line)
      else next(line)
    }
  })
  const exited = new Promise<never>((_, reject) =>
    child.on('exit', (code, signal) => reject(new Error(`cardinality worker exited (${code ?? signal})`))),
  )
  exited.catch(() => {})
  const nextLine = () =>
    Promise.race([
      new Promise<string>((resolve) => {
        const line = lines.shift()
        if (line === undefined) waiting.push(resolve)
        else resolve(line)
      }),
      exited,
    ])
  if ((await nextLine()) !== 'ready') throw new Error('cardinality worker did not start')
  return {
    child,
    async ask<T>(command: unknown): Promise<T> {
      child.stdin?.write(`${JSON.stringify(command)}\n`)
      return JSON.parse(await nextLine()) as T
    },
    async close() {
      child.stdin?.write(`${JSON.stringify({ close: true })}\n`)
      await nextLine().catch(() => undefined)
      child.kill()
    },
  }
}

/** Runs `during` and returns the commands the server ran meanwhile: all, and script calls. */
export async function countCommands(
  client: Redis,
  during: () => Promise<unknown>,
): Promise<{ commands: number; scripts: number; byName: Record<string, number> }> {
  const before = parseCommandStats(await client.info('commandstats'))
  await during()
  const byName = commandsBetween(before, parseCommandStats(await client.info('commandstats')))
  const commands = Object.values(byName).reduce((a, b) => a + b, 0)
  return { commands, scripts: (byName.evalsha ?? 0) + (byName.eval ?? 0), byName }
}
