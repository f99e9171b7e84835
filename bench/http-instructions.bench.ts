// Instructions per request of the same hello-world servers as `pnpm bench:http`, counted by
// valgrind (callgrind) instead of timed. A count hardly moves with what else this shared machine
// runs: two identical servers measured side by side agree within 0.1–4 %, where CPU time per
// request moves by ±40 % between samples. It is not immune: Node does some work per second of
// wall time (the cached Date header, timers), which a server slowed down by other jobs spreads
// over fewer requests, so one server is measured at a time by default (a row measured beside
// three other valgrind jobs read 7 % higher). It counts user-space instructions only (JavaScript,
// V8, Node's C++; not the kernel's socket work, so every ratio is larger than its CPU-time
// equivalent), and valgrind runs code about 50 times slower: it stands beside the timed
// benchmark, not instead of it.
//
// Each server runs under callgrind with its instrumentation counting from the start; it takes
// WARM requests (until the JIT has settled), the counters are zeroed (`callgrind_control -z`),
// it takes COUNT more, and the counters are dumped (`-d`). The main thread's instructions ÷
// COUNT is the row's figure. Requests come over keep-alive loopback connections, each with an
// `x-client-id` from the same 1 024 as the timed benchmark.
//
//   pnpm bench:http-instructions   # env: BENCH_FRAMEWORKS=express,koa,hono,fastify BENCH_VARIANTS=sluice-1,…
//                                  #      BENCH_WARM=8000 BENCH_COUNT=3000 BENCH_JOBS=1 BENCH_KEEP=1
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdir, readdir, readFile, rm } from 'node:fs/promises'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import {
  CLIENT_HEADER,
  CLIENTS,
  type Framework,
  loaderFor,
  VARIANT_LABELS,
  VARIANTS,
  type Variant,
} from './http/config.js'

const WARM = Number(process.env.BENCH_WARM ?? 8000)
const COUNT = Number(process.env.BENCH_COUNT ?? 3000)
const JOBS = Number(process.env.BENCH_JOBS ?? 1)
const SOCKETS = 4
// BENCH_KEEP=1 keeps each server's dumps, to read with `callgrind_annotate <dir>/callgrind.out.1-01`.
const KEEP = process.env.BENCH_KEEP === '1'
const FRAMEWORKS = (process.env.BENCH_FRAMEWORKS?.split(',') ?? Object.keys(VARIANTS)) as Framework[]
const ONLY_VARIANTS = process.env.BENCH_VARIANTS
  ? new Set(['none', ...process.env.BENCH_VARIANTS.split(',')])
  : undefined

const run = promisify(execFile)

async function assertValgrind(): Promise<void> {
  try {
    await run('valgrind', ['--version'])
  } catch {
    throw new Error('valgrind is not installed: apt-get install valgrind (this benchmark counts instructions with it)')
  }
}

/** Starts a server under callgrind; resolves with its port once it listens. */
function startServer(
  framework: Framework,
  variant: Variant,
  outDir: string,
): Promise<{ child: ChildProcess; port: number }> {
  const script = fileURLToPath(new URL(`./http/${framework}.ts`, import.meta.url))
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 rewrites its own machine code: valgrind must notice, or it runs stale translations.
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(outDir, 'callgrind.out')}`,
      process.execPath,
      '--import',
      loaderFor(framework),
      '--conditions=source',
      script,
      variant,
    ],
    { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  )
  let output = ''
  return new Promise((resolve, reject) => {
    const collect = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening (\d+)/.exec(output)
      if (match) resolve({ child, port: Number(match[1]) })
    }
    child.stdout!.on('data', collect)
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once('exit', (code) => reject(new Error(`${framework} ${variant} exited (${code}): ${output.slice(-2000)}`)))
  })
}

/** `count` GET / requests over SOCKETS keep-alive connections; every answer must be a 200. */
async function load(port: number, count: number, agent: http.Agent, first: number): Promise<void> {
  let next = first
  const end = first + count
  const one = (id: number) =>
    new Promise<void>((resolve, reject) => {
      const headers = { [CLIENT_HEADER]: `client-${id % CLIENTS}` }
      http
        .get({ host: '127.0.0.1', port, path: '/', agent, headers }, (response) => {
          response.resume()
          response.on('end', () =>
            response.statusCode === 200 ? resolve() : reject(new Error(`status ${response.statusCode}`)),
          )
        })
        .on('error', reject)
    })
  await Promise.all(
    Array.from({ length: SOCKETS }, async () => {
      while (next < end) await one(next++)
    }),
  )
}

/** The main thread's instruction count in the newest dump (callgrind's file per thread ends in -01). */
async function mainThreadInstructions(outDir: string): Promise<number> {
  const files = (await readdir(outDir)).filter((name) => /\.1-01$/.test(name) || name === 'callgrind.out.1')
  if (files.length !== 1) throw new Error(`expected one main-thread dump in ${outDir}, found: ${files.join(', ')}`)
  const text = await readFile(join(outDir, files[0]!), 'utf8')
  const match = /^(?:summary|totals): (\d+)/m.exec(text)
  if (!match) throw new Error(`no instruction total in ${files[0]}`)
  return Number(match[1])
}

async function measure(framework: Framework, variant: Variant): Promise<number> {
  const outDir = join(tmpdir(), `sluice-callgrind-${framework}-${variant}-${process.pid}`)
  await rm(outDir, { recursive: true, force: true })
  await mkdir(outDir)
  const { child, port } = await startServer(framework, variant, outDir)
  const agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS })
  try {
    await load(port, WARM, agent, 0)
    await run('callgrind_control', ['-z', String(child.pid)])
    await load(port, COUNT, agent, WARM)
    await run('callgrind_control', ['-d', String(child.pid)])
    return (await mainThreadInstructions(outDir)) / COUNT
  } finally {
    agent.destroy()
    child.kill('SIGKILL')
    if (KEEP) console.error(`${framework} ${variant}: callgrind dumps kept in ${outDir}`)
    else await rm(outDir, { recursive: true, force: true })
  }
}

await assertValgrind()
const jobs = FRAMEWORKS.flatMap((framework) =>
  VARIANTS[framework]
    .filter((variant) => !ONLY_VARIANTS || ONLY_VARIANTS.has(variant))
    .map((variant) => ({ framework, variant })),
)
const results = new Map<string, number>()
let started = 0
await Promise.all(
  Array.from({ length: JOBS }, async () => {
    while (started < jobs.length) {
      const { framework, variant } = jobs[started++]!
      const perRequest = await measure(framework, variant)
      results.set(`${framework} ${variant}`, perRequest)
      console.error(`${framework.padEnd(7)} ${variant.padEnd(8)} ${Math.round(perRequest)} instructions/request`)
    }
  }),
)

console.log(`
HTTP hello world, instructions per request (callgrind, main thread, user space): ${WARM} requests to warm up, then ${COUNT} counted
node ${process.version}; ratios are to the same framework's server without middleware

| framework | middleware | instructions/request | − none | ÷ none |
|---|---|---:|---:|---:|`)
for (const { framework, variant } of jobs) {
  const none = results.get(`${framework} none`)!
  const row = results.get(`${framework} ${variant}`)!
  console.log(
    `| ${framework} | ${VARIANT_LABELS[variant]} | ${Math.round(row)} | ${Math.round(row - none)} | ${(row / none).toFixed(3)} |`,
  )
}
