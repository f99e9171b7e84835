import { defineConfig } from 'tsdown'
import base from '../../tsdown.base'

// node:crypto (SHA-1 of the script, SHA-256 of long keys): this package runs on Node. Keep the
// .js/.cjs names that package.json points at (the node platform would default to .mjs).
export default defineConfig({ ...base, platform: 'node', fixedExtension: false })
