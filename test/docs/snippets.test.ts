// Every TypeScript block of every README and guide compiles under strict settings (one program),
// and each block marked `run` runs and prints what the page says it prints.
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'
import { bundled } from '../support/bundle.js'
import { findRedis, type RedisServer, startRedisServer } from '../support/redis.js'
import { allSnippets, root, type Snippet, snippetPath } from './snippets.js'

const snippets = allSnippets()
const contextsDir = `${root}test/docs/contexts/`
const virtualDir = `${root}test/docs/.snippets/`

/**
 * The block as a module of its own, after the declarations of its context that it does not make
 * itself: a context stands for the rest of the page's app, one `declare` per line.
 */
function sourceOf(snippet: Snippet): { text: string; offset: number } {
  if (snippet.context === undefined) return { text: `${snippet.code}\nexport {}\n`, offset: 0 }
  const own = declaredNames(snippet.code)
  const context = readFileSync(`${contextsDir}${snippet.context}.ts`, 'utf8')
    .split('\n')
    .filter((line) => {
      const name = /^declare (?:const|function|class|type) (\w+)/.exec(line)?.[1]
      return name !== undefined && !own.has(name)
    })
  return { text: `${[...context, snippet.code].join('\n')}\nexport {}\n`, offset: context.length }
}

/** The names a block declares at its top level: its imports, variables, functions, classes and types. */
function declaredNames(code: string): Set<string> {
  const names = new Set<string>()
  const add = (name: ts.BindingName | ts.Identifier | undefined): void => {
    if (name === undefined) return
    if (ts.isIdentifier(name)) names.add(name.text)
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) add(element.name)
  }
  for (const statement of ts.createSourceFile('block.ts', code, ts.ScriptTarget.Latest).statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause
      add(clause?.name)
      const bindings = clause?.namedBindings
      if (bindings !== undefined && ts.isNamespaceImport(bindings)) add(bindings.name)
      if (bindings !== undefined && ts.isNamedImports(bindings)) for (const e of bindings.elements) add(e.name)
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) add(declaration.name)
    } else if (
      ts.isFunctionDeclaration(statement) ||
      ts.isClassDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      ts.isInterfaceDeclaration(statement)
    ) {
      add(statement.name)
    }
  }
  return names
}

function compilerOptions(): ts.CompilerOptions {
  const base = ts.readConfigFile(`${root}tsconfig.base.json`, ts.sys.readFile)
  const { options } = ts.parseJsonConfigFileContent(base.config, ts.sys, root)
  // An application's settings: strict (from the base), Node's types, no DOM; Nest's decorators
  // are TypeScript's experimental ones, as every Nest app compiles them.
  return {
    ...options,
    noEmit: true,
    declaration: false,
    types: ['node'],
    lib: ['lib.es2022.d.ts'],
    experimentalDecorators: true,
  }
}

describe('the TypeScript blocks of the docs', () => {
  it('are found in the READMEs and guides, each context they name exists', () => {
    expect(snippets.length).toBeGreaterThan(40)
    for (const file of ['README.md', 'packages/core/README.md', 'docs/keys.md', 'packages/redis/README.md']) {
      expect(snippets.some((s) => s.file === file)).toBe(true)
    }
    const missing = snippets.filter((s) => s.context !== undefined && !existsSync(`${contextsDir}${s.context}.ts`))
    expect(missing.map((s) => `${s.file}:${s.line} context=${s.context}`)).toEqual([])
  })

  it('compile under strict settings', () => {
    const shared = compile(snippets.filter((s) => !s.alone))
    const problems = [...shared.problems]
    for (const snippet of snippets.filter((s) => s.alone)) {
      problems.push(...compile([snippet], shared.program).problems)
    }
    expect(problems).toEqual([])
  }, 120_000)
})

/** Compiles the blocks as one program; its diagnostics name the Markdown file and line. */
function compile(group: readonly Snippet[], oldProgram?: ts.Program): { program: ts.Program; problems: string[] } {
  const sources = new Map<string, { text: string; offset: number; snippet: Snippet }>()
  for (const snippet of group) {
    sources.set(`${virtualDir}${snippetPath(snippet)}`, { ...sourceOf(snippet), snippet })
  }
  const options = compilerOptions()
  const host = ts.createCompilerHost(options)
  const { getSourceFile, fileExists, readFile, directoryExists } = host
  host.fileExists = (name) => sources.has(name) || fileExists.call(host, name)
  host.directoryExists = (name) => name.startsWith(virtualDir) || directoryExists?.call(host, name) !== false
  host.readFile = (name) => sources.get(name)?.text ?? readFile.call(host, name)
  host.getSourceFile = (name, language, onError) => {
    const virtual = sources.get(name)
    return virtual === undefined
      ? getSourceFile.call(host, name, language, onError)
      : ts.createSourceFile(name, virtual.text, language)
  }
  const program = ts.createProgram([...sources.keys()], options, host, oldProgram)
  // The blocks' own diagnostics, not every package source's (`pnpm typecheck` checks those): the
  // checker then reads only the declarations the blocks use, a fraction of the full check.
  const blocks = program.getSourceFiles().filter((file) => sources.has(file.fileName))
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...blocks.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
  ]
  const problems = diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n')
    const source = d.file === undefined ? undefined : sources.get(d.file.fileName)
    if (d.file === undefined || source === undefined || d.start === undefined) {
      return `${d.file?.fileName ?? '(program)'}: TS${d.code} ${message}`
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start)
    const at = line - source.offset
    const where = at < 0 ? `(context ${source.snippet.context})` : `${source.snippet.line + at}`
    return `${source.snippet.file}:${where}: TS${d.code} ${message}`
  })
  return { program, problems }
}

const runnable = snippets.filter((s) => s.run)
const runDir = `${root}test/docs/.run/`
/** Vitest for the blocks that are tests: source conditions, as this repository's own config. */
const vitestConfig = (file: string) => `export default {
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: { include: [${JSON.stringify(file)}] },
}
`
let redis: RedisServer | undefined
afterAll(async () => {
  rmSync(runDir, { recursive: true, force: true })
  await redis?.stop()
})

/** Writes the block, and the modules its page declares with `file=`, where Node resolves the workspace. */
function writeProgram(snippet: Snippet): { dir: string; file: string } {
  const file = `${runDir}${snippetPath(snippet)}`
  const dir = file.slice(0, file.lastIndexOf('/') + 1)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  for (const other of snippets) {
    if (other.file === snippet.file && other.module !== undefined)
      writeFileSync(`${runDir}${snippetPath(other)}`, sourceOf(other).text)
  }
  writeFileSync(file, sourceOf(snippet).text)
  return { dir, file }
}

describe.each(runnable.map((s) => [`${s.file}:${s.line}`, s] as const))('the program at %s', (_, snippet) => {
  const isTest = /from 'vitest'/.test(snippet.code)
  it(isTest ? 'passes its tests' : 'runs to the end, printing what the page shows and no warning', async () => {
    const { dir, file } = writeProgram(snippet)
    let env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' }
    if (snippet.code.includes('REDIS_URL')) {
      redis ??= (await findRedis()) ?? (await startRedisServer())
      env = { ...env, REDIS_URL: redis.url }
    }
    // A program is compiled as tsx would (esbuild, the workspace by its source condition) and run by
    // Node: the same program without tsx's second or so of loading in each process.
    const args = isTest
      ? [`${root}node_modules/vitest/vitest.mjs`, 'run', '--root', dir, '--config', `${dir}vitest.config.ts`]
      : [await bundled(file)]
    if (isTest) writeFileSync(`${dir}vitest.config.ts`, vitestConfig(file.slice(dir.length)))
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { cwd: dir, env, timeout: 60_000 })
    if (isTest) return
    expect(stderr).toBe('')
    if (snippet.output !== undefined) expect(stdout.trimEnd()).toBe(snippet.output.trimEnd())
  }, 70_000)
})
