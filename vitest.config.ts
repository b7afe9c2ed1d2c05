import { defineConfig } from 'vitest/config';

// One runner for every package's tests and the cross-package tests in test/.
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests share two cores with the native writer thread; files run one process at a time each.
    pool: 'forks',
    fileParallelism: true,
  },
});
