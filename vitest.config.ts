import { defineConfig } from 'vitest/config';

// Tests run the sources: the workspace packages resolve through their "wharf-source" export
// condition, here and in every child process a test starts (NODE_OPTIONS is inherited).
process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, '--conditions=wharf-source'].filter(Boolean).join(' ');

// One runner for every package's tests and the cross-package tests in test/.
export default defineConfig({
  resolve: { conditions: ['wharf-source'] },
  ssr: { resolve: { conditions: ['wharf-source'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests share two cores with the native writer thread; files run one process at a time each.
    pool: 'forks',
    fileParallelism: true,
  },
});
