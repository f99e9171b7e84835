import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExecutionContext,
  Module,
  type RpcExceptionFilter,
} from '@nestjs/common'
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, NestFactory } from '@nestjs/core'
import {
  ClientProxyFactory,
  MessagePattern,
  type MicroserviceOptions,
  RpcException,
  Transport,
} from '@nestjs/microservices'
import { createLimiter, MemoryStore } from '@sluice/core'
import { RateLimitException, RateLimitGuard, RateLimitInterceptor, SluiceModule } from '@sluice/nestjs'
import { firstValueFrom, type Observable, throwError } from 'rxjs'
import { describe, expect, it } from 'vitest'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The documented way to answer a denial over a transport: an RpcException the client can read. */
@Catch(RateLimitException)
class RateLimitToRpc implements RpcExceptionFilter<RateLimitException> {
  catch(exception: RateLimitException, _host: ArgumentsHost): Observable<never> {
    return throwError(() => new RpcException({ status: 429, retryAfter: exception.retryAfter }).getError())
  }
}

const userOf = (context: ExecutionContext) => context.switchToRpc().getData<{ user: string }>().user

describe('@sluice/nestjs on a microservice (TCP)', () => {
  it('keys by the message, refuses with a RateLimitException the RPC filter answers, and refunds failed handlers through the interceptor', async () => {
    const limiter = createLimiter({ limits: '2/min', store: new MemoryStore() })
    @Controller()
    class Worker {
      @MessagePattern('work')
      work(data: { user: string; fail?: boolean }) {
        if (data.fail) throw new RpcException('work failed')
        return `done for ${data.user}`
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ limiter, key: userOf, skipFailedRequests: true })],
      controllers: [Worker],
      providers: [
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_INTERCEPTOR, useClass: RateLimitInterceptor },
        { provide: APP_FILTER, useClass: RateLimitToRpc },
      ],
    })
    class WorkerModule {}
    const port = await freePort()
    const app = await NestFactory.createMicroservice<MicroserviceOptions>(WorkerModule, {
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
      abortOnError: false,
    })
    await app.listen()
    const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } })
    const send = (data: object) => firstValueFrom(client.send<string>('work', data))
    try {
      // Failures are given back once the handler has failed: ann never runs out.
      for (let i = 0; i < 4; i++) {
        await expect(send({ user: 'ann', fail: true })).rejects.toMatchObject({ message: 'work failed' })
        await expect.poll(async () => (await limiter.peek('ann')).remaining).toBe(2)
      }
      expect(await send({ user: 'ann' })).toBe('done for ann')
      expect(await send({ user: 'ann' })).toBe('done for ann')
      await expect(send({ user: 'ann' })).rejects.toMatchObject({ status: 429, retryAfter: expect.any(Number) })
      // Another key has its own count.
      expect(await send({ user: 'bob' })).toBe('done for bob')
      expect((await limiter.peek('ann')).remaining).toBe(0)
    } finally {
      client.close()
      await app.close()
    }
  })

  it('without a key of its own a message has no client address: the handler is not run and the error names key', async () => {
    let ran = 0
    @Controller()
    class Worker {
      @MessagePattern('work')
      work() {
        ran++
        return 'done'
      }
    }
    const errors: unknown[] = []
    @Catch()
    class Record implements RpcExceptionFilter {
      catch(exception: unknown): Observable<never> {
        errors.push(exception)
        return throwError(() => ({ message: (exception as Error).message }))
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ limits: '2/min' })],
      controllers: [Worker],
      providers: [
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_FILTER, useClass: Record },
      ],
    })
    class WorkerModule {}
    const port = await freePort()
    const app = await NestFactory.createMicroservice<MicroserviceOptions>(WorkerModule, {
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
      abortOnError: false,
    })
    await app.listen()
    const client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } })
    try {
      await expect(firstValueFrom(client.send('work', {}))).rejects.toMatchObject({
        message: expect.stringMatching(/could not find the client's IP address.*key/),
      })
      expect(errors[0]).toMatchObject({ name: 'ClientAddressError' })
      expect(ran).toBe(0)
    } finally {
      client.close()
      await app.close()
    }
  })
})
