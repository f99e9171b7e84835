import { defineConfig } from 'tsdown'

/** Every package builds the same way: ESM + CJS + types from src/index.ts, for any runtime. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  platform: 'neutral',
})
