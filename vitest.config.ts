import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Files that measure time or load run after the rest: bounded waits while a private Redis is
 * stopped or stalled (which mostly wait), heap and key bounds, a few light app processes (a
 * decision every few ms), two at a time (PAIRED); overshoot, convergence and waits with several
 * processes saturating the CPU, and the fault suite's tight bounds on waits, one at a time
 * (ALONE). Everything else waits mostly on Redis, workerd and child processes: two files at a time.
 * The packages' own unit tests (no Redis, no processes) share their workers' modules (UNIT): loading
 * core afresh for each of them cost about a second a file, more than most of them take to run. So a
 * unit test of something said once per process loads its modules afresh (`vi.resetModules()`).
 */
const UNIT = ['packages/*/src/**/*.test.ts']
const PAIRED = [
  'test/redis/failure.test.ts',
  'test/synced/faults.test.ts',
  'test/faults/soak.test.ts',
  'test/faults/flood.test.ts',
  'test/faults/fallback-share.test.ts',
  'test/synced/cardinality.test.ts',
  'test/synced/lease-processes.test.ts',
  // CLIENT PAUSE on the shared Redis would stall other files' calls: none of this group uses it.
  'test/synced/store.test.ts',
]
const ALONE = ['test/faults/faults.test.ts', 'test/synced/processes.test.ts', 'test/redis/active-clients-sync.test.ts']

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
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...PAIRED, ...ALONE],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      // Same group as 'parallel' (its two workers), run after it: vitest orders a group's projects by name.
      {
        extends: true,
        test: { name: 'unit', include: UNIT, isolate: false, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'paired', include: PAIRED, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
})
