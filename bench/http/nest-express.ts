// Nest on its Express platform for the HTTP benchmark: node --import tsx --conditions=source bench/http/nest-express.ts <variant>
import { serve } from './nest.js'

await serve('express')
