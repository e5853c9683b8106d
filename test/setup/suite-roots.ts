/**
 * Vitest's global setup: the Debian roots that the suite tests' hosts run on (src/lab/suites.ts),
 * built once per run before any test file starts — on a fresh CI machine in parallel, about two
 * minutes — instead of inside one file's beforeAll while another waits on its lock. Where they are
 * cached already this is three file checks. Needs root and mmdebstrap (scripts/setup installs it);
 * without either the lab tests skip or say what is missing themselves.
 */
import { spawnSync } from 'node:child_process';
import { ensureSuiteRoots, hasRoot, rootsDirFrom } from '../../src/lab/roots.js';
import { SUITES } from '../../src/lab/suites.js';

export default async function setup(): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const dir = rootsDirFrom();
  const missing = SUITES.filter((s) => !hasRoot(dir, s));
  if (missing.length === 0) return;
  if (spawnSync('sh', ['-c', 'command -v mmdebstrap']).status !== 0) {
    console.warn(
      `NOTE: no mmdebstrap: the ${missing.join(', ')} roots cannot be built; the suite tests will say so (install it with scripts/setup)`,
    );
    return;
  }
  const started = Date.now();
  console.warn(`building the lab's Debian roots (${missing.join(', ')}) into ${dir}, once`);
  await Promise.all(
    missing.map((s) =>
      ensureSuiteRoots(dir, [s], (line) => (/ready|building|waiting/.test(line) ? console.warn(line) : undefined)),
    ),
  );
  console.warn(`roots ready in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
