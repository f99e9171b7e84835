import { defineConfig } from 'tsdown'
import base from '../../tsdown.base'

// Five entries: the main one, @sluice/core/adapter (for framework adapters), @sluice/core/store
// (for store authors), @sluice/core/internal (helpers sluice's own packages share) and
// @sluice/core/testing (the store conformance suite).
export default defineConfig({
  ...base,
  entry: ['src/index.ts', 'src/adapter.ts', 'src/store.ts', 'src/internal.ts', 'src/testing.ts'],
})
