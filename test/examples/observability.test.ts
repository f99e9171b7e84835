// examples/observability: Prometheus metrics at /metrics, and a live page whose plot moves when
// requests arrive, loaded in headless Chromium (Debian's `chromium`, which .ci/run installs).
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import puppeteer from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const exampleDir = fileURLToPath(new URL('../../examples/observability/', import.meta.url))
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => path !== undefined && existsSync(path),
)
if (CHROMIUM === undefined) {
  if (process.env.CI === 'true')
    throw new Error('CI=true and no chromium: .ci/run installs it (apt-get install chromium)')
  console.warn(
    'examples/observability: skipping the browser test, chromium is not installed (apt-get install chromium)',
  )
}

function start(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=source', 'index.ts'], {
    cwd: exampleDir,
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`no URL within 15 s; output:\n${output}`)), 15_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/localhost:\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve({ child, url: (match[1] as string).replace('localhost', '127.0.0.1') })
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`exited early (code ${code}); output:\n${output}`)))
  })
}

describe('examples/observability', () => {
  let example: { child: ChildProcess; url: string }
  beforeAll(async () => {
    example = await start()
  }, 20_000)
  afterAll(() => {
    example?.child.kill('SIGTERM')
  })

  it('exports sluice metrics for Prometheus at /metrics', async () => {
    for (let i = 0; i < 4; i++) await fetch(`${example.url}/search`)
    const text = await (await fetch(`${example.url}/metrics`)).text()
    expect(text).toMatch(/sluice_decisions_total\{allowed="true",source="store",policy="search"[^}]*\} 2/)
    expect(text).toMatch(/sluice_decisions_total\{allowed="false",source="store",policy="search"[^}]*\} 2/)
    expect(text).toMatch(/sluice_store_duration_count\{source="store"/)
  })

  it.skipIf(CHROMIUM === undefined)(
    'the live page plots allowed and denied per second per policy, and moves when requests arrive',
    async () => {
      const browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      })
      try {
        const page = await browser.newPage()
        await page.goto(example.url, { waitUntil: 'domcontentloaded' })
        const total = () => page.$eval('#total', (el) => Number(el.textContent))
        // The first test's requests may arrive with the first second the page hears of: count from here.
        const before = await total()
        // Steady traffic for a few seconds: /api stays under 5/s, /search goes over 2/s.
        const until = Date.now() + 3500
        while (Date.now() < until) {
          await Promise.all([fetch(`${example.url}/api`), fetch(`${example.url}/search`)])
          await new Promise((resolve) => setTimeout(resolve, 250))
        }
        // Two requests per round, a dozen rounds or fewer on a busy machine; each second reaches the page as it ends.
        await page.waitForFunction(
          (seen: number) => Number(document.querySelector('#total')?.textContent) >= seen + 4,
          { timeout: 5000 },
          before,
        )
        expect(await total()).toBeGreaterThanOrEqual(before + 4)
        const lines = await page.$$eval('#plot polyline', (els) =>
          els.map((el) => ({
            policy: el.getAttribute('data-policy'),
            outcome: el.getAttribute('data-outcome'),
            // The highest point of the line (SVG y grows downwards): below 230 means it rose.
            top: Math.min(...(el.getAttribute('points') ?? '').split(' ').map((p) => Number(p.split(',')[1]))),
          })),
        )
        const line = (policy: string, outcome: string) =>
          lines.find((l) => l.policy === policy && l.outcome === outcome)
        expect(line('api', 'allowed')?.top).toBeLessThan(230)
        expect(line('search', 'allowed')?.top).toBeLessThan(230)
        expect(line('search', 'denied')?.top).toBeLessThan(230)
      } finally {
        await browser.close()
      }
    },
    30_000,
  )
})
