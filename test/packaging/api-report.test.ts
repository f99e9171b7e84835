// The API report: every name each published entry point exports, checked in under api/. A change
// to the public surface fails here until `pnpm api:update` rewrites the report, so it shows up in
// review as a diff of api/*.txt. Every exported name also needs a doc comment (the TypeDoc reference
// is built from them: `pnpm docs:api`).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const root = new URL('../../', import.meta.url).pathname
const reportDir = join(root, 'api')
const update = process.env.UPDATE_API === '1'

interface Entry {
  /** The import specifier: '@sluice/core', '@sluice/core/adapter'. */
  specifier: string
  file: string
  report: string
}

function entries(): Entry[] {
  const found: Entry[] = []
  for (const dir of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8'))
    if (manifest.private) continue
    for (const [subpath, conditions] of Object.entries(manifest.exports ?? {})) {
      const source = (conditions as { source?: string }).source
      if (typeof source !== 'string') continue
      const specifier = `${manifest.name}${subpath.slice(1)}`
      found.push({
        specifier,
        file: join(root, 'packages', dir, source),
        report: join(reportDir, `${specifier.replace(/^@sluice\//, '').replaceAll('/', '.')}.txt`),
      })
    }
  }
  return found
}

/** `value name` or `type name` per export, sorted: what `import { … }` can name. */
function surface(program: ts.Program, file: string): string[] {
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(file)
  const module = source && checker.getSymbolAtLocation(source)
  if (!module) throw new Error(`no module for ${file}`)
  return checker
    .getExportsOfModule(module)
    .map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      return `${target.flags & ts.SymbolFlags.Value ? 'value' : 'type'} ${symbol.name}`
    })
    .sort((a, b) => a.slice(a.indexOf(' ')).localeCompare(b.slice(b.indexOf(' '))))
}

const all = entries()
const program = ts.createProgram(
  all.map((entry) => entry.file),
  {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    customConditions: ['source'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  },
)

/** Exported names whose declaration has no doc comment: what a reader of the API reference would miss. */
function undocumented(program: ts.Program, file: string): string[] {
  const checker = program.getTypeChecker()
  const module = checker.getSymbolAtLocation(program.getSourceFile(file) as ts.SourceFile)
  if (!module) throw new Error(`no module for ${file}`)
  return checker
    .getExportsOfModule(module)
    .filter((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === ''
    })
    .map((symbol) => symbol.name)
}

describe('the public API report (api/*.txt)', () => {
  it.each(all.map((entry) => [entry.specifier, entry] as const))('%s documents every exported name', (_, entry) => {
    expect(undocumented(program, entry.file)).toEqual([])
  })

  it.each(all.map((entry) => [entry.specifier, entry] as const))('%s exports what api/ lists', (specifier, entry) => {
    const text = `# ${specifier}: exported names (pnpm api:update rewrites this file)\n${surface(program, entry.file).join('\n')}\n`
    if (update) {
      mkdirSync(reportDir, { recursive: true })
      writeFileSync(entry.report, text)
      return
    }
    expect(existsSync(entry.report), `${entry.report} is missing: run pnpm api:update`).toBe(true)
    expect(text, `the public surface of ${specifier} changed: run pnpm api:update and review api/`).toBe(
      readFileSync(entry.report, 'utf8'),
    )
  })
})
