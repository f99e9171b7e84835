// Nest on its Fastify platform for the HTTP benchmark: node --import tsx --conditions=source bench/http/nest-fastify.ts <variant>
import { serve } from './nest.js'

await serve('fastify')
