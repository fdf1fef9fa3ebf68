import { defineConfig } from 'vitest/config';

/**
 * Test files that hold a PostgreSQL transaction open on purpose or for long (a write held before its COMMIT; copies
 * of thousands of events in one transaction). The PostgreSQL store reads the log only up to the oldest transaction
 * still open in the whole cluster (a later commit must not be skipped), so while one of these runs, a test in another
 * file that appends and then reads at once can find its own event held back: they run after every other file, one
 * at a time (CI failed on it: a snapshot test's replay and a harness's catalogue saw nothing of what they had just
 * written).
 */
const HOLD_THE_CLUSTER = [
  'test/contract/postgres-event-store.test.ts',
  'test/int/store-copy-postgres.test.ts',
  'test/int/postgres-held-back.test.ts',
  // Holds one while a tail's read finds its row held back: as long as that takes on a loaded machine.
  'test/int/store-wakeups.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration and e2e suites spawn processes and open real databases; two cores are all we have.
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'estate', include: ['test/**/*.test.ts'], exclude: HOLD_THE_CLUSTER } },
      { extends: true, test: { name: 'holds the PostgreSQL cluster', include: HOLD_THE_CLUSTER, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
