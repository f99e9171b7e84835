/**
 * A second process for the concurrency test: waits for "go" on stdin, fires `count` concurrent
 * consumes at one key, prints how many were admitted.
 * Args: client library (a name in test/support/clients.ts), port (127.0.0.1), prefix, key, limits
 * (JSON), count, now (epoch ms).
 */
import { createInterface } from 'node:readline'
import { parsePolicies } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { clientKind } from '../support/clients.js'

const [library = '', port = '0', prefix = '', key = '', limits = '[]', count = '0', now = '0'] = process.argv.slice(2)
const { client, close } = await clientKind(library).single(Number(port))
const store = new RedisStore({ client, prefix, deniedCache: false, now: () => Number(now) })
const set = parsePolicies(JSON.parse(limits))
process.stdout.write('ready\n')
for await (const _ of createInterface({ input: process.stdin })) break
const outcomes = await Promise.all(Array.from({ length: Number(count) }, () => store.consume(key, set, 1)))
process.stdout.write(`${JSON.stringify({ admitted: outcomes.filter((o) => o.every((x) => x.allowed)).length })}\n`)
close()
