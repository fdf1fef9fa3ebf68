import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration and e2e suites spawn processes and open real databases; two cores are all we have.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
