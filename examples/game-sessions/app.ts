import type { ActiveClients } from '@sluice/core'
import { admissionControl } from '@sluice/express'
import express, { type Express, type Request } from 'express'

export interface GameOptions {
  /** Players active within 30 minutes above which only those players are served. */
  maxActive: number
  /** Epoch milliseconds, for the demo's fast-forward. Default Date.now. */
  now?: () => number
}

/** The access token of `Authorization: Bearer <token>`; a real app verifies it first. */
function accessToken(req: Request): string {
  const header = req.get('authorization') ?? ''
  return header.startsWith('Bearer ') ? header.slice('Bearer '.length) : ''
}

/**
 * A game backend that protects itself in a surge: sessions last 30 minutes, so once
 * more than `maxActive` players were active in the last 30 minutes, players already in a session
 * keep playing and newcomers get 429 until activity drops.
 */
export function createGameApp({ maxActive, now }: GameOptions): { app: Express; clients: ActiveClients } {
  const app = express()
  const admission = admissionControl({
    maxActive,
    window: '30min',
    key: accessToken,
    // A request without a token is refused before it can count as a player.
    skip: (req) => accessToken(req) === '',
    ...(now !== undefined && { now }),
  })
  app.use('/play', (req, res, next) => {
    if (accessToken(req) === '') res.status(401).json({ error: 'send Authorization: Bearer <access token>' })
    else next()
  })
  app.use('/play', admission)
  app.get('/play', (req, res) => {
    res.json({ move: 'ok', admission: req.admission })
  })
  app.get('/', (_req, res) => {
    res.json({ routes: ['GET /play (Authorization: Bearer <token>)'], maxActive })
  })
  return { app, clients: admission.clients }
}
