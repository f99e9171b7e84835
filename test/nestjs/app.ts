import type { INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import request from 'supertest'

export type Platform = 'express' | 'fastify'
export const platforms: readonly Platform[] = ['express', 'fastify']

/** A Nest app of this module on this platform, listening on a free loopback port. */
export async function start(module: object, platform: Platform): Promise<INestApplication> {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()
  const app = await NestFactory.create(module as never, adapter, { logger: false, abortOnError: false })
  await app.listen(0, '127.0.0.1')
  return app
}

export interface Reply {
  status: number
  headers: Record<string, string | undefined>
  body: unknown
}

export async function get(app: INestApplication, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await request(app.getHttpServer()).get(path).set(headers)
  return { status: res.status, headers: res.headers as Record<string, string>, body: res.body }
}

/** Statuses of `n` requests in a row. */
export async function statuses(app: INestApplication, path: string, n: number, headers?: Record<string, string>) {
  const out: number[] = []
  for (let i = 0; i < n; i++) out.push((await get(app, path, headers)).status)
  return out
}
