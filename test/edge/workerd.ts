// A fixture worker bundled the way Wrangler would (esbuild, ESM, no Node built-ins) and started in
// workerd through Miniflare, offline, with no nodejs_compat flag: what a plain Workers project gets.
import { builtinModules } from 'node:module'
import { build, type Metafile } from 'esbuild'
import { Miniflare } from 'miniflare'

/** A Node built-in the bundle asked for, and who asked. */
export interface NodeImport {
  path: string
  importer: string
}

export interface Worker {
  mf: Miniflare
  metafile: Metafile
  /** Node built-ins the bundle imports: recorded instead of failing the build, so a test can name every offender. */
  nodeImports: NodeImport[]
}

const builtins = new Set(builtinModules)

/** A worker bundled for workerd, and what the bundle is made of. */
export interface Bundle {
  script: string
  metafile: Metafile
  nodeImports: NodeImport[]
}

/** Bundles `entry` the way Wrangler would. */
export async function bundleWorker(entry: string): Promise<Bundle> {
  const nodeImports: NodeImport[] = []
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['source', 'workerd', 'worker', 'browser'],
    target: 'es2022',
    logLevel: 'silent',
    plugins: [
      {
        name: 'record-node-imports',
        setup(b) {
          b.onResolve({ filter: /.*/ }, ({ path, importer }) => {
            if (!path.startsWith('node:') && !builtins.has(path)) return undefined
            nodeImports.push({ path, importer })
            return { path, external: true }
          })
        },
      },
    ],
  })
  return { script: result.outputFiles[0]!.text, metafile: result.metafile, nodeImports }
}

/**
 * Starts a bundled worker in workerd; `options` adds bindings (`durableObjects`) and the like.
 * Storage is in memory unless `durableObjectsPersist` names a directory.
 */
export async function serveWorker(
  script: string,
  options: { durableObjects?: Record<string, string>; durableObjectsPersist?: string } = {},
): Promise<Miniflare> {
  const mf = new Miniflare({ modules: true, script, compatibilityDate: '2025-01-01', ...options })
  await mf.ready
  return mf
}

export async function startWorker(entry: string, options?: Parameters<typeof serveWorker>[1]): Promise<Worker> {
  const { script, metafile, nodeImports } = await bundleWorker(entry)
  return { mf: await serveWorker(script, options), metafile, nodeImports }
}
