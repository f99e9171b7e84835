// Type tests for `limits` (`pnpm typecheck` checks every @ts-expect-error below): a string
// literal that is no shorthand fails to compile; strings known only at run time still compile,
// and are checked when the limiter is made.
import { ConfigError, createLimiter } from '@sluice/core'
import { rateLimit as expressRateLimit } from '@sluice/express'
import { rateLimit as honoRateLimit } from '@sluice/hono'
import { rateLimit as koaRateLimit } from '@sluice/koa'
import { describe, expect, it } from 'vitest'

describe('limits as a type', () => {
  it('accepts shorthands, objects and strings from variables', () => {
    createLimiter({ limits: '100/min' })
    createLimiter({ limits: ['100/min', '2/s', '10/5m', '5/15 minutes', '1/1.5s', '1000/day'] })
    createLimiter({ limits: [{ limit: 10, window: '1s', algorithm: 'gcra', burst: 5 }, '5/min'] })
    const fromConfig: string = ['100', 'min'].join('/')
    createLimiter({ limits: fromConfig })
    createLimiter({ limits: [fromConfig, '2/s'] })
    const list: string[] = ['100/min']
    createLimiter({ limits: list })
    expressRateLimit({ limits: ['100/min', '2/s'] })
    koaRateLimit({ limits: fromConfig })
    honoRateLimit({ limits: '5/15min' })
  })

  it('rejects an obviously malformed literal at compile time, and at run time', () => {
    // @ts-expect-error not "<limit>/<window>"
    expect(() => createLimiter({ limits: '100 per min' })).toThrow(ConfigError)
    // @ts-expect-error no such unit
    expect(() => createLimiter({ limits: ['100/min', '100/fortnight'] })).toThrow(ConfigError)
    // @ts-expect-error 'M' is not a unit
    expect(() => expressRateLimit({ limits: '100/M' })).toThrow(ConfigError)
    // @ts-expect-error not "<limit>/<window>"
    expect(() => koaRateLimit({ limits: ['100 per minute'] })).toThrow(ConfigError)
    // @ts-expect-error not "<limit>/<window>"
    expect(() => honoRateLimit({ limits: 'lots' })).toThrow(ConfigError)
  })
})
