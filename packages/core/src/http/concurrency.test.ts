import { describe, expect, it } from 'vitest'
import { ConfigError } from '../diagnostics/errors.js'
import { SketchInflightCounter } from '../sketch/inflight.js'
import { createConcurrencyHandler } from './concurrency.js'
import { onStreamDone } from './stream.js'

describe('createConcurrencyHandler', () => {
  const adapter = { name: '@sluice/test', addressSource: 'ip', address: (ip: string) => ip, status: () => 200 }

  it('validates limit, name and unknown options', () => {
    expect(() => createConcurrencyHandler({ limit: 0 }, adapter)).toThrow(ConfigError)
    expect(() => createConcurrencyHandler({ limit: 1, name: '' }, adapter)).toThrow(/name must be/)
    expect(() => createConcurrencyHandler({ limit: 1, max: 2 } as never, adapter)).toThrow(/known options: limit, name/)
  })

  it('denies beyond the limit and admits again after a release', async () => {
    const handler = createConcurrencyHandler({ limit: 1, name: 'slots' }, adapter)
    const first = await handler.plan('10.0.0.1')
    if (first.kind !== 'continue') throw new Error(first.kind)
    expect(first.headers.map((h) => h.value)).toEqual(['"slots";q=1;qu="concurrent-requests"', '"slots";r=0'])
    const second = await handler.plan('10.0.0.1')
    expect(second).toMatchObject({ kind: 'deny', status: 429, info: { key: '10.0.0.1', inflight: 1, limit: 1 } })
    first.release()
    first.release()
    expect(await handler.plan('10.0.0.1')).toMatchObject({ kind: 'continue' })
    expect(handler.inflight.count('10.0.0.1')).toBe(1)
  })
})

describe('createConcurrencyHandler with a counter', () => {
  const adapter = { name: '@sluice/test', addressSource: 'ip', address: (ip: string) => ip, status: () => 200 }

  it('counts in the counter it is given: a one-counter sketch makes every client share one slot', async () => {
    const counter = new SketchInflightCounter({ hashes: 1, slots: 1 })
    const handler = createConcurrencyHandler({ limit: 1, counter }, adapter)
    const first = await handler.plan('10.0.0.1')
    expect(first).toMatchObject({ kind: 'continue' })
    expect(await handler.plan('10.0.0.2')).toMatchObject({ kind: 'deny', info: { key: '10.0.0.2', inflight: 1 } })
    expect(counter.count('10.0.0.2')).toBe(1)
    if (first.kind === 'continue') first.release()
    expect(await handler.plan('10.0.0.2')).toMatchObject({ kind: 'continue' })
    expect(handler.inflight).toBe(counter)
  })

  it('refuses a counter that cannot count, naming the option', () => {
    for (const counter of [5, {}, { acquire: () => {} }, null]) {
      expect(() => createConcurrencyHandler({ limit: 1, counter } as never, adapter)).toThrow(
        expect.objectContaining({ name: 'ConfigError', field: 'counter' }),
      )
    }
  })
})

describe('onStreamDone', () => {
  const source = () =>
    new ReadableStream<string>({
      start(controller) {
        controller.enqueue('a')
        controller.enqueue('b')
        controller.close()
      },
    })

  it('calls back once when the stream ends, passing every chunk through', async () => {
    let calls = 0
    const text = await new Response(onStreamDone(source(), () => calls++).pipeThrough(new TextEncoderStream())).text()
    expect(text).toBe('ab')
    expect(calls).toBe(1)
  })

  it('calls back when the reader cancels, and cancels the source', async () => {
    let calls = 0
    let cancelled: unknown
    const endless = new ReadableStream<string>({
      pull(controller) {
        controller.enqueue('x')
      },
      cancel(reason) {
        cancelled = reason
      },
    })
    const reader = onStreamDone(endless, () => calls++).getReader()
    await reader.read()
    await reader.cancel('gone')
    expect(calls).toBe(1)
    expect(cancelled).toBe('gone')
  })

  it('calls back when the source fails', async () => {
    let calls = 0
    const failing = new ReadableStream<string>({
      pull() {
        throw new Error('boom')
      },
    })
    await expect(
      onStreamDone(failing, () => calls++)
        .getReader()
        .read(),
    ).rejects.toThrow('boom')
    expect(calls).toBe(1)
  })
})
