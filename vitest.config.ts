import { defineConfig } from 'vitest/config';

/**
 * Projects, told apart by where a test lives. `unit`: every test that needs neither root nor a lab —
 * pure code, rendered files, the real tools run offline (shellcheck, netplan, nmcli) — which any
 * user runs (`npm run test:unit`, the fast loop). `root`: test/e2e/ (the lab's end-to-end stories)
 * and test/root/ (network namespaces, mounts, files of other users), whose Debian roots the global
 * setup builds. `npm test` runs them all.
 */
const ROOT_ONLY = ['test/e2e/**', 'test/root/**'];
const TEST_FILES = ['test/**/*.test.ts', 'test/**/*.test.tsx'];
/** Unit files that set process-wide state when they load (chalk's colour level): each in a process of its own. */
const LOAD_STATE = ['test/ui/colors.test.tsx'];

export default defineConfig({
  test: {
    pool: 'forks',
    // Lab tests bring up real namespaces and sshd; two workers match the two cores CI has.
    maxWorkers: 2,
    testTimeout: 60_000,
    // The steps render host/files/ templates; a test may call a step without src/render, which installs their source.
    setupFiles: ['test/setup/host-templates.ts'],
    hookTimeout: 180_000,
    // test/setup/flaky-reporter.ts names, at the end, every test that passed only on its retry.
    reporters: ['default', './test/setup/flaky-reporter.ts'],
    projects: [
      // Not isolated: a worker imports ibfleet's modules once, not once per file — a third of the
      // loop's CPU. A unit test leaves no state behind (LOAD_STATE excepted).
      {
        extends: true,
        test: { name: 'unit', include: TEST_FILES, exclude: [...ROOT_ONLY, ...LOAD_STATE], isolate: false },
      },
      { extends: true, test: { name: 'unit-isolated', include: LOAD_STATE } },
      {
        extends: true,
        test: {
          name: 'root',
          include: ROOT_ONLY.map((dir) => `${dir.replace('/**', '')}/**/*.test.{ts,tsx}`),
          // The Debian roots of the lab's suite hosts, built once per run (cached across runs).
          globalSetup: ['test/setup/suite-roots.ts'],
          // Under CI (two workers on two cores beside every lab's daemons) a lab story that fails
          // runs once more; the flaky reporter prints what its failed attempt said. Locally a
          // failure is a failure at once.
          retry: process.env.CI ? 1 : 0,
        },
      },
    ],
  },
});
