import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'

const run = promisify(execFile)

// The short form of `pnpm soak` (60 s): a few seconds of steady HTTP load in its own process.
describe('soak', () => {
  it('steady load: no heap or handle growth', async () => {
    const script = fileURLToPath(new URL('./soak.ts', import.meta.url))
    const { stdout } = await run(process.execPath, ['--expose-gc', await bundled(script), '--seconds', '4'], {
      timeout: 30_000,
    })
    const result = JSON.parse(stdout.trim().split('\n').pop() as string)
    expect(result.requests).toBeGreaterThan(500)
    expect(result.statuses[200]).toBeGreaterThan(0)
    expect(result.statuses[429]).toBeGreaterThan(0)
    expect(result.heapGrowthBytes).toBeLessThan(4 * 1024 * 1024)
    expect(result.handles[1]).toBeLessThanOrEqual(result.handles[0])
  }, 40_000)
})
