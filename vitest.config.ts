import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Files that measure time or load (bounded waits while Redis is stopped or stalled, overshoot and
 * convergence with several processes saturating the CPU, heap growth) run last, one at a time.
 * Everything else waits mostly on Redis, workerd and child processes: two files at a time.
 */
const ALONE = [
  'test/faults/**/*.test.ts',
  'test/synced/**/*.test.ts',
  'test/redis/failure.test.ts',
  'test/redis/active-clients-sync.test.ts',
]

export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    testTimeout: 20_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'parallel',
          include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
})
