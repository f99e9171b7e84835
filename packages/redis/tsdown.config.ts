import { defineConfig } from 'tsdown'

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  // node:crypto (SHA-1 of the script, SHA-256 of long keys): this package runs on Node.
  platform: 'node',
})
