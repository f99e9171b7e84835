import type { AddressInfo } from 'node:net'
import { createGameApp } from './app.js'

const { app } = createGameApp({ maxActive: Number(process.env.MAX_ACTIVE ?? 1000) })
const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  const { port } = server.address() as AddressInfo
  console.log(`game-sessions listening on http://localhost:${port}
Any bearer token is a player here (a real app verifies it first); try:
  curl -H 'Authorization: Bearer player-1' http://localhost:${port}/play`)
})

// Ctrl-C (or a stop) ends the example with status 0, so `pnpm start` reports no failure.
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => server.close(() => process.exit(0)).closeAllConnections())
