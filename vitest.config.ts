import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // The Debian roots of the lab's suite hosts, built once per run (cached across runs).
    globalSetup: ['test/setup/suite-roots.ts'],
    pool: 'forks',
    // Lab tests bring up real namespaces and sshd; two workers match the two cores CI has.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
