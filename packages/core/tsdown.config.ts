import { defineConfig } from 'tsdown'
import base from '../../tsdown.base'

// Three entries: the main one, @sluice/core/adapter (for framework adapters) and
// @sluice/core/testing (the store conformance suite).
export default defineConfig({ ...base, entry: ['src/index.ts', 'src/adapter.ts', 'src/testing.ts'] })
