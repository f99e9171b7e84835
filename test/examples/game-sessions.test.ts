// examples/game-sessions: its demo fills the game past maxActive and must end as its README says.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'

const run = promisify(execFile)
const dir = fileURLToPath(new URL('../../examples/game-sessions/', import.meta.url))

// Bundled once (as the other process tests do) rather than compiled by tsx at start: on a busy
// machine tsx's compile of the workspace alone passed the 20 s timeout.
it('serves players in a session and refuses newcomers with 429 until activity drops', { timeout: 60_000 }, async () => {
  const { stdout } = await run(process.execPath, [await bundled(`${dir}demo.ts`)], { cwd: dir })
  expect(stdout).toContain('the 51 players in a session keep playing             51× 200')
  expect(stdout).toContain('40 new players arrive (throttling mode)              40× 429 (Retry-After: 60s)')
  expect(stdout).toContain('old sessions were served, new ones got 429 until activity dropped')
})
