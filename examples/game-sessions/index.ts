import type { AddressInfo } from 'node:net'
import { createGameApp } from './app.js'

const { app } = createGameApp({ maxActive: Number(process.env.MAX_ACTIVE ?? 1000) })
const server = app.listen(Number(process.env.PORT ?? 3000), () => {
  const { port } = server.address() as AddressInfo
  console.log(`game-sessions listening on http://localhost:${port}`)
})
