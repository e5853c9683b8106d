/**
 * The quick start's scripts where only root can test them: the demo refuses options it does not know
 * before touching anything (it needs root to get that far), and as_root runs a script as root
 * without sudo (a fresh Debian has none) and through sudo otherwise (becoming another user needs
 * root). The rest of the first run: test/unit/first-run.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI } from '../../helpers/cli.js';

const ROOT = resolve(CLI, '../..');
const IS_ROOT = process.getuid?.() === 0;
const temp = mkdtempSync(join(tmpdir(), 'ibfleet-first-run-'));
chmodSync(temp, 0o755);
afterAll(() => rmSync(temp, { recursive: true, force: true }));
if (!IS_ROOT) console.warn('NOTE: test/root/unit/first-run.test.ts skipped: it needs root');

describe('the project scripts, as root', () => {
  it.skipIf(!IS_ROOT)('the demo refuses options it does not know (exit 2, usage), before touching anything', () => {
    const result = spawnSync('bash', ['scripts/demo', '--nmae', 'x'], { cwd: ROOT, encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('demo: unknown option --nmae');
    expect(result.stderr).toContain('usage: npm run demo [-- --name NAME] [--mgmt-subnet CIDR]');
  });
});

describe.skipIf(!IS_ROOT)('as_root: sudo only when not root (needs root to become another user)', () => {
  /** A script that sources as-root.sh, with a `sudo` stub on PATH that records how it was called. */
  const probe = join(temp, 'probe.sh');
  const stubs = join(temp, 'stubs');
  const logs = join(temp, 'logs');
  const log = join(logs, 'sudo.log');
  writeFileSync(
    probe,
    `#!/usr/bin/env bash\nsource ${JSON.stringify(join(ROOT, 'scripts/lib/as-root.sh'))}\nas_root "$@"\necho "ran as $(id -u): $*"\n`,
    { mode: 0o755 },
  );
  execFileSync('mkdir', ['-p', stubs, logs]);
  chmodSync(logs, 0o777);
  writeFileSync(join(stubs, 'sudo'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${log}\n`, { mode: 0o755 });
  const run = (asNobody: boolean, path: string) =>
    spawnSync(
      asNobody ? '/usr/bin/setpriv' : '/bin/bash',
      asNobody
        ? ['--reuid=65534', '--regid=65534', '--clear-groups', '/bin/bash', probe, 'a b', 'c']
        : [probe, 'a b', 'c'],
      {
        encoding: 'utf8',
        env: { PATH: path, IBFLEET_TEST_SLOT: '7', HOME: temp, SECRET_TOKEN: 'x' },
      },
    );

  it('root goes on without sudo, even where sudo is not installed', () => {
    rmSync(log, { force: true });
    const result = run(false, `${stubs}:/usr/bin:/bin`);
    expect(result.stdout).toBe('ran as 0: a b c\n');
    expect(() => readFileSync(log)).toThrow();
  });

  it('a user runs the script again through sudo, keeping PATH (root sbin directories added) and IBFLEET_* and nothing else of theirs', () => {
    rmSync(log, { force: true });
    const path = `${stubs}:/usr/bin:/sbin:/bin`;
    const result = run(true, path);
    expect(result.stderr).toContain('not root; running it through sudo');
    expect(readFileSync(log, 'utf8').split('\n')).toEqual([
      '--',
      'env',
      `PATH=${path}:/usr/local/sbin:/usr/sbin`,
      'IBFLEET_TEST_SLOT=7',
      'bash',
      probe,
      'a b',
      'c',
      '',
    ]);
  });

  it('a user without sudo is told to run it as root (exit 2)', () => {
    const result = run(true, '/nonexistent');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('needs root (network namespaces, apt) and sudo is not installed: run it as root');
  });
});
