// Child-process entry points compiled once per test file: a test that starts several processes
// then spends no time in each on tsx compiling the workspace's sources again (about 1 s of CPU a
// process, seconds for a fleet on 2 cores).
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'

const root = fileURLToPath(new URL('../../', import.meta.url))
/** Inside the root's node_modules, so the bundle's bare imports resolve to the root's packages. */
const dir = `${root}node_modules/.cache/sluice-test-bundles/`

/** The workspace's packages (by their `source` condition) go into the bundle; every other package stays an import. */
const packagesExternal: Plugin = {
  name: 'packages-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@sluice/') ? undefined : { path: args.path, external: true },
    )
  },
}

const bundles = new Map<string, Promise<string>>()

/**
 * The path of `entry` (a TypeScript file) bundled as one ES module with the workspace's sources,
 * as `node --conditions=source --import tsx entry` would run it: `node <path> …args`.
 */
export function bundled(entry: string): Promise<string> {
  let path = bundles.get(entry)
  if (path === undefined) {
    path = bundle(entry)
    bundles.set(entry, path)
  }
  return path
}

async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['source'],
    plugins: [packagesExternal],
    logLevel: 'silent',
  })
  const code = result.outputFiles[0]?.contents as Uint8Array
  // Named by content: files running at once that bundle the same entry write the same file, once.
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16)
  const path = `${dir}${basename(dirname(entry))}-${basename(entry, '.ts')}-${hash}.mjs`
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true })
    const temporary = `${path}.${process.pid}.tmp`
    writeFileSync(temporary, code)
    renameSync(temporary, path)
  }
  return path
}
