/**
 * The cache of Debian roots that suite hosts run on (suites.ts): each root is built once, on the
 * first `lab up` that needs it, with mmdebstrap's progress passed on line by line, and kept across
 * labs — `lab down` never removes it. Concurrent `lab up`s wait for one build (a lock per suite) and
 * never see a half-built root (it appears by one rename). $IBFLEET_LAB_ROOTS moves the cache,
 * $IBFLEET_DEBIAN_MIRROR the mirror.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { LabError, UsageError, tail } from '../errors.js';
import { BASE_ENV } from './system.js';
import { DEFAULT_ROOTS_DIR, parseVersions, renderRootBuildScript, suiteVersionsFile, type Suite } from './suites.js';

/** Package versions of each suite's root, as `dpkg-query` recorded them when it was built. */
export type SuiteVersions = Partial<Record<Suite, Readonly<Record<string, string>>>>;

/** The cache directory: $IBFLEET_LAB_ROOTS if set (an absolute path of plain characters), else the default. */
export function rootsDirFrom(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const dir = env.IBFLEET_LAB_ROOTS;
  if (dir === undefined || dir === '') return DEFAULT_ROOTS_DIR;
  if (!/^\/[\w./-]*$/.test(dir) || dir.split('/').includes('..')) {
    throw new UsageError(
      `IBFLEET_LAB_ROOTS ${JSON.stringify(dir)}: give an absolute path of letters, digits and . _ - /, e.g. ${DEFAULT_ROOTS_DIR}`,
    );
  }
  return dir.replace(/\/+$/, '') || '/';
}

export function hasRoot(rootsDir: string, suite: Suite): boolean {
  return existsSync(suiteVersionsFile(rootsDir, suite));
}

/**
 * Every suite's root ready in the cache, built where missing (one suite after the other: each build
 * already keeps the mirror and the disk busy). Returns their package versions.
 */
export async function ensureSuiteRoots(
  rootsDir: string,
  suites: readonly Suite[],
  onStep: (text: string) => void,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<SuiteVersions> {
  const out: SuiteVersions = {};
  for (const suite of suites) {
    if (!hasRoot(rootsDir, suite)) await buildRoot(rootsDir, suite, onStep, env.IBFLEET_DEBIAN_MIRROR);
    out[suite] = parseVersions(await readFile(suiteVersionsFile(rootsDir, suite), 'utf8'));
  }
  return out;
}

function buildRoot(
  rootsDir: string,
  suite: Suite,
  onStep: (text: string) => void,
  mirror: string | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-euc', renderRootBuildScript(rootsDir, suite, mirror)], {
      env: { ...BASE_ENV },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.trim()) onStep(`${suite} root: ${line.trim()}`);
      });
    }
    child.on('error', (error) =>
      reject(new LabError('lab up: root', `building the ${suite} root failed: ${error.message}`)),
    );
    child.on('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new LabError(
            'lab up: root',
            `building the ${suite} root failed (exit ${code}); nothing was kept, the next lab up builds it again`,
            { exitCode: code ?? 1, stderrTail: tail(lines.join('\n'), 8) },
          ),
        );
    });
  });
}
