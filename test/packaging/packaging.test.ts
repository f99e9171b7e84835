// Packs every published package as `pnpm publish` would (prepack builds it), checks what the
// tarballs hold, installs them into a scratch project outside the workspace (from the local pnpm
// store), type-checks a strict ESM + CommonJS app against them and runs it on every adapter,
// also with `node --conditions=source` (which must not reach for the unpacked src/).
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('../../', import.meta.url).pathname
const require = createRequire(join(root, 'package.json'))

interface Manifest {
  name: string
  private?: boolean
  exports?: unknown
  publishConfig?: { exports?: unknown }
  dependencies?: Record<string, string>
  [field: string]: unknown
}

const readJson = (file: string): Manifest => JSON.parse(readFileSync(file, 'utf8'))
const published = readdirSync(join(root, 'packages'))
  .map((dir) => ({ dir: join(root, 'packages', dir), manifest: readJson(join(root, 'packages', dir, 'package.json')) }))
  .filter(({ manifest }) => !manifest.private)

/** The consumer app's own dependencies, at the versions the workspace has (so the store has them). */
const THIRD_PARTY = [
  'express',
  'koa',
  'hono',
  'fastify',
  'ioredis',
  '@types/express',
  '@types/koa',
  '@types/node',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  'reflect-metadata',
  'rxjs',
]
const versionOf = (name: string) => readJson(join(root, 'node_modules', name, 'package.json')).version as string

/** Every string target in an exports map, with the conditions that lead to it. */
function targets(exports: unknown, path: string[] = []): { path: string[]; target: string }[] {
  if (typeof exports === 'string') return [{ path, target: exports }]
  if (exports === null || typeof exports !== 'object') return []
  return Object.entries(exports).flatMap(([key, value]) => targets(value, [...path, key]))
}

function withoutSource(exports: unknown): unknown {
  if (exports === null || typeof exports !== 'object') return exports
  return Object.fromEntries(
    Object.entries(exports)
      .filter(([key]) => key !== 'source')
      .map(([key, value]) => [key, withoutSource(value)]),
  )
}

let scratch: string
const tarballs = new Map<string, string>()
const packed = new Map<string, { files: string[]; manifest: Manifest }>()

type Ran = { stdout: string; stderr: string }
/** A command's output whether it exits 0 or not: the tests assert on what it printed. */
const settled = (file: string, args: string[], cwd: string): Promise<Ran> =>
  run(file, args, { cwd }).catch((error: Ran) => error)

/**
 * attw's report on each tarball, made while the app installs (which mostly waits on the disk) and
 * read by the tests; one tarball at a time, since each run loads a TypeScript program of its own.
 */
const attwReports = new Map<string, Promise<Ran>>()

function startAttw(): void {
  const attw = join(root, 'node_modules/.bin/attw')
  let previous: Promise<unknown> = Promise.resolve()
  for (const [name, tarball] of tarballs) {
    const report = previous.then(() => settled(attw, [tarball, '--format', 'json'], root))
    attwReports.set(name, report)
    previous = report
  }
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'sluice-packaging-'))
  const dest = join(scratch, 'tarballs')
  // All at once: each prepack runs tsdown, which waits on I/O as much as on a core.
  await Promise.all(
    published.map(async ({ dir, manifest }) => {
      const { stdout } = await run('pnpm', ['pack', '--pack-destination', dest, '--json'], { cwd: dir })
      const filename = (JSON.parse(stdout.slice(stdout.indexOf('{'))) as { filename: string }).filename
      tarballs.set(manifest.name, filename)
      const unpacked = join(scratch, 'unpacked', manifest.name)
      mkdirSync(unpacked, { recursive: true })
      await run('tar', ['xzf', filename, '-C', unpacked])
      const { stdout: list } = await run('tar', ['tzf', filename])
      packed.set(manifest.name, {
        files: list
          .split('\n')
          .filter(Boolean)
          .map((file) => file.replace(/^package\//, '')),
        manifest: readJson(join(unpacked, 'package', 'package.json')),
      })
    }),
  )

  const app = join(scratch, 'app')
  cpSync(join(root, 'test/packaging/fixture'), app, { recursive: true })
  const sluice = Object.fromEntries([...tarballs].map(([name, file]) => [name, `file:${file}`]))
  const thirdParty = Object.fromEntries(THIRD_PARTY.map((name) => [name, versionOf(name)]))
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'sluice-packaging-app',
      private: true,
      dependencies: { ...sluice, ...thirdParty },
      // The adapters depend on @sluice/core by version: take it from its tarball, not the registry.
      pnpm: { overrides: sluice },
    }),
  )
  startAttw()
  await run('pnpm', ['install', '--prefer-offline', '--ignore-workspace', '--config.confirmModulesPurge=false'], {
    cwd: app,
    env: { ...process.env, CI: 'true' },
  })
}, 180_000)

afterAll(async () => {
  // Nothing still reading the scratch directory when it goes, whatever failed first.
  await Promise.all(attwReports.values())
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

// attw's reports come one after another, beside the install: a tarball's may be a while coming.
describe.each(published.map(({ manifest }) => manifest.name))('the %s tarball', { timeout: 180_000 }, (name) => {
  it('holds dist, README.md, CHANGELOG.md and LICENSE, and no sources or tests', () => {
    const { files } = packed.get(name)!
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']))
    expect(files.some((file) => file.startsWith('dist/'))).toBe(true)
    expect(files.filter((file) => file.startsWith('src/') || file.includes('.test.'))).toEqual([])
  })

  it('points exports, main, module and types only at files it holds, with no source condition', () => {
    const { files, manifest } = packed.get(name)!
    const entries = targets(manifest.exports).filter(({ target }) => target !== './package.json')
    expect(entries.length).toBeGreaterThan(0)
    expect(entries.filter(({ path }) => path.includes('source'))).toEqual([])
    for (const { target } of entries) expect(files).toContain(target.replace(/^\.\//, ''))
    for (const field of ['main', 'module', 'types'] as const) {
      const target = manifest[field]
      if (typeof target === 'string') expect(files).toContain(target.replace(/^\.\//, ''))
    }
    expect(JSON.stringify(manifest.dependencies ?? {})).not.toContain('workspace:')
  })

  it('has types that resolve under node10, node16 (ESM and CJS) and bundler (@arethetypeswrong/cli)', async () => {
    // The strict profile: node10 (`moduleResolution: node`) reaches subpaths such as
    // @sluice/core/testing through typesVersions.
    const result = await attwReports.get(name)!
    const report = JSON.parse(result.stdout) as { analysis: { problems: { resolutionKind?: string }[] } }
    expect(report.analysis.problems).toEqual([])
  })

  // Many Nest apps still compile with moduleResolution node10: the package has no subpaths, so it
  // resolves there too. The same attw report (its default profile includes node10), read again.
  it.runIf(name === '@sluice/nestjs')('has types that resolve under node10 as well', async () => {
    const result = await attwReports.get(name)!
    const report = JSON.parse(result.stdout) as { analysis: { problems: unknown[] } }
    expect(report.analysis.problems).toEqual([])
  })

  it('publishes the same exports as the workspace uses, less the source condition', () => {
    const { manifest } = published.find((entry) => entry.manifest.name === name)!
    expect(manifest.publishConfig?.exports).toEqual(withoutSource(manifest.exports))
  })

  it('says where it comes from, under which licence, and which Node it needs', () => {
    const { manifest } = packed.get(name)!
    expect(manifest).toMatchObject({
      license: 'MIT',
      repository: { type: 'git', url: 'git+https://github.com/sluice-rl/sluice.git' },
      bugs: { url: 'https://github.com/sluice-rl/sluice/issues' },
      engines: { node: '>=20' },
    })
    expect(manifest.homepage).toMatch(/^https:\/\/github\.com\/sluice-rl\/sluice\//)
    expect((manifest.keywords as string[]).length).toBeGreaterThan(3)
    expect(manifest.author ?? manifest.maintainers).toBeTruthy()
  })
})

// Generous timeouts: tsc and four Node processes on a machine that may be busy with other work
// (one tsc of the app took 52 s at a load average of 20).
describe('a consumer project installed from the tarballs', { timeout: 180_000 }, () => {
  const app = () => join(scratch, 'app')
  // t (seconds to full quota) depends on where in the aligned window the test runs.
  const header = expect.stringMatching(/^"1-per-1m";r=0;t=\d+$/)
  const expected = (format: string) => ({
    format,
    core: { allowed: [true, true, false], redisStore: true, conformance: expect.any(Number) },
    cloudflare: { allowed: true, objectClass: 'function' },
    express: { statuses: [200, 429], header, remaining: 0 },
    koa: { statuses: [200, 429], header, remaining: 0 },
    fastify: { statuses: [200, 429], header, remaining: 0 },
    hono: { statuses: [200, 429], header, remaining: 0 },
    nestjs: { statuses: [200, 429], header, remaining: 0 },
  })
  const node = async (args: string[]) => JSON.parse((await run(process.execPath, args, { cwd: app() })).stdout)

  // Both type-checks start with the first: each is one single-threaded tsc of 10-15 s, so one
  // after the other they kept a core of a 2-core machine idle for as long.
  const typeChecks = new Map<string, Promise<Ran>>()
  const typeCheck = (project: string): Promise<Ran> => {
    if (typeChecks.size === 0) {
      const tsc = require.resolve('typescript/bin/tsc')
      for (const each of ['tsconfig.json', 'node10/tsconfig.json']) {
        typeChecks.set(each, settled(process.execPath, [tsc, '-p', each], app()))
      }
    }
    return typeChecks.get(project) as Promise<Ran>
  }
  afterAll(async () => {
    await Promise.all(typeChecks.values())
  })

  it('type-checks a strict ESM and CommonJS app against the packed types', async () => {
    const result = await typeCheck('tsconfig.json')
    expect(result.stdout).toBe('')
    expect(existsSync(join(app(), 'out/app.mjs')) && existsSync(join(app(), 'out/app.cjs'))).toBe(true)
  })

  it('type-checks under moduleResolution node (node10), every entry of every package', async () => {
    const result = await typeCheck('node10/tsconfig.json')
    expect(result.stdout).toBe('')
  })

  it('runs on every adapter as ESM (import)', async () => {
    expect(await node(['out/app.mjs'])).toEqual(expected('esm'))
  })

  it('runs on every adapter as CommonJS (require)', async () => {
    expect(await node(['out/app.cjs'])).toEqual(expected('cjs'))
  })

  it('runs with node --conditions=source, which the published exports do not name', async () => {
    expect(await node(['--conditions=source', 'out/app.mjs'])).toEqual(expected('esm'))
    expect(await node(['--conditions=source', 'out/app.cjs'])).toEqual(expected('cjs'))
  })
})
