// GraphQL through @nestjs/graphql and Apollo (schema first: no emitDecoratorMetadata needed), on
// Nest's Express platform: the guard reads the resolver's context for the HTTP request and
// response, and a denial reaches the client as a GraphQL error.

import { unwrapResolverError } from '@apollo/server/errors'
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo'
import { type ExecutionContext, Module } from '@nestjs/common'
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core'
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql'
import { createLimiter, MemoryStore } from '@sluice/core'
import { RateLimit, RateLimitException, RateLimitGuard, RateLimitInterceptor, SluiceModule } from '@sluice/nestjs'
import request from 'supertest'
import { describe, expect, it } from 'vitest'
import { start } from './app.js'

const typeDefs = 'type Query { hello: String, search: String, risky: String }'

describe('@sluice/nestjs on GraphQL (Apollo, Express platform)', () => {
  it('limits resolvers by the HTTP client, with headers on the response, and refuses with a GraphQL error', async () => {
    const limiter = createLimiter({ limits: '2/min', store: new MemoryStore() })
    let riskyRuns = 0
    @Resolver()
    class Greetings {
      @Query()
      hello() {
        return 'hi'
      }
      @RateLimit({
        limits: '1/min',
        key: (context: ExecutionContext) => context.getArgByIndex(2).req.headers['x-user'],
      })
      @Query()
      search() {
        return 'found'
      }
      @RateLimit({ limiter, skipFailedRequests: true })
      @Query()
      risky() {
        riskyRuns++
        throw new Error('risky failed')
      }
    }
    @Module({
      imports: [
        SluiceModule.forRoot({ limits: '3/min' }),
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          typeDefs,
          context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
          // The documented way to give clients a code and the wait: Nest's Apollo driver knows no 429.
          formatError: (formatted, error) => {
            const cause = unwrapResolverError(error)
            if (!(cause instanceof RateLimitException)) return formatted
            return { ...formatted, extensions: { code: 'TOO_MANY_REQUESTS', retryAfter: cause.retryAfter } }
          },
        }),
      ],
      providers: [
        Greetings,
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_INTERCEPTOR, useClass: RateLimitInterceptor },
      ],
    })
    class AppModule {}
    const app = await start(AppModule, 'express')
    const query = (q: string, user = 'ann') =>
      request(app.getHttpServer())
        .post('/graphql')
        .set('x-user', user)
        .send({ query: `{ ${q} }` })
    try {
      const first = await query('hello')
      expect(first.body).toEqual({ data: { hello: 'hi' } })
      expect(first.headers.ratelimit).toMatch(/^"3-per-1m";r=2;t=\d+$/)
      await query('hello')
      await query('hello')
      const denied = await query('hello')
      expect(denied.body.data).toEqual({ hello: null })
      expect(denied.body.errors[0]).toMatchObject({
        message: expect.stringMatching(/^Too many requests: the 3-per-1m limit would be exceeded/),
        extensions: { code: 'TOO_MANY_REQUESTS', retryAfter: Number(denied.headers['retry-after']) },
      })
      expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0)

      // A resolver's own limit, keyed by a header of the request behind the resolver's context.
      expect((await query('search', 'bob')).body).toEqual({ data: { search: 'found' } })
      expect((await query('search', 'bob')).body.errors[0].extensions.code).toBe('TOO_MANY_REQUESTS')
      expect((await query('search', 'cy')).body).toEqual({ data: { search: 'found' } })

      // A failing resolver is given back through the interceptor: the 200 of the GraphQL response says nothing.
      for (let i = 0; i < 4; i++) {
        const failed = await query('risky')
        expect(failed.body.errors[0].message).toBe('risky failed')
        await expect.poll(async () => (await limiter.peek('127.0.0.1')).remaining).toBe(2)
      }
      expect(riskyRuns).toBe(4)
    } finally {
      await app.close()
    }
  })
})
