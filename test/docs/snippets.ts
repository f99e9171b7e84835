// Finds the TypeScript blocks of the repository's Markdown, with what their info strings ask for.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const root = fileURLToPath(new URL('../../', import.meta.url))

/**
 * One ```ts block. Its info string may carry, after the language:
 * - `context=<name>`: the block continues an app the page built earlier (`app`, `redis`, …); the
 *   declarations of `test/docs/contexts/<name>.ts` stand for it.
 * - `run`: the block is a whole program: it must exit with status 0 and write nothing to stderr,
 *   and when the next fenced block is ```text, print exactly that. A block that imports vitest
 *   is run by vitest, and its tests must pass.
 * - `file=<name>.ts`: the block is that module, which other blocks of the page import as
 *   `./<name>.js`.
 * - `alone`: compiled in a program of its own, for a block whose global declarations would
 *   change what the others mean (an opt-in augmentation).
 */
export interface Snippet {
  /** Repository-relative path of the Markdown file. */
  readonly file: string
  /** 1-based line of the block's first code line. */
  readonly line: number
  readonly code: string
  readonly context: string | undefined
  readonly run: boolean
  readonly alone: boolean
  /** The module's name from `file=`, if the page imports it. */
  readonly module: string | undefined
  /** What a `run` block must print: the ```text block right after it. */
  readonly output: string | undefined
}

/** Every Markdown file git knows or would add, but changelogs, which record history rather than teach. */
export function markdownFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => file !== '' && !file.endsWith('CHANGELOG.md') && !file.startsWith('.changeset/'))
}

const FENCE = /^```(\S*)\s*(.*)$/

export function snippetsOf(file: string, text = readFileSync(`${root}${file}`, 'utf8')): Snippet[] {
  const lines = text.split('\n')
  const blocks: { lang: string; flags: string; line: number; code: string }[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) continue
    const start = i + 1
    let end = start
    while (end < lines.length && !lines[end]!.startsWith('```')) end++
    blocks.push({ lang: open[1]!, flags: open[2]!, line: start + 1, code: lines.slice(start, end).join('\n') })
    i = end
  }
  const snippets: Snippet[] = []
  for (const [i, block] of blocks.entries()) {
    if (block.lang !== 'ts' && block.lang !== 'typescript') continue
    const flags = block.flags.split(/\s+/).filter(Boolean)
    const flagValue = (name: string) => flags.find((f) => f.startsWith(`${name}=`))?.slice(name.length + 1)
    const unknown = flags.filter((f) => f !== 'run' && f !== 'alone' && !/^(context|file)=/.test(f))
    if (unknown.length > 0)
      throw new Error(`${file}:${block.line - 1}: unknown flag ${unknown.join(' ')} on a ts block`)
    const run = flags.includes('run')
    const next = blocks[i + 1]
    snippets.push({
      file,
      line: block.line,
      code: block.code,
      context: flagValue('context'),
      run,
      alone: flags.includes('alone'),
      module: flagValue('file'),
      output: run && next?.lang === 'text' ? next.code : undefined,
    })
  }
  return snippets
}

export function allSnippets(): Snippet[] {
  return markdownFiles().flatMap((file) => snippetsOf(file))
}

/** The block's path, unique in the repository: `docs/keys.md` line 12 → `docs__keys.md/line-12.ts`. */
export function snippetPath(snippet: Snippet): string {
  return `${snippet.file.replaceAll('/', '__')}/${snippet.module ?? `line-${snippet.line}.ts`}`
}
