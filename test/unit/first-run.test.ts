/**
 * The quick start as a new user meets it: the scripts run as root without sudo (a fresh Debian has
 * none) and through sudo otherwise; `ibfleet` works as npm installs it (a global link) from any
 * directory, and as `npx ibfleet` in the checkout.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { CLI } from '../helpers/cli.js';

const ROOT = resolve(CLI, '../..');
const IS_ROOT = process.getuid?.() === 0;
const temp = mkdtempSync(join(tmpdir(), 'ibfleet-first-run-'));
chmodSync(temp, 0o755);
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe('the project scripts', () => {
  it('pass shellcheck', () => {
    const scripts = ['scripts/setup', 'scripts/demo', 'scripts/test', 'scripts/lib/as-root.sh'];
    const result = spawnSync('shellcheck', ['-x', ...scripts], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

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

describe('ibfleet as npm installs it', () => {
  it('a global link (what scripts/setup makes with npm link) runs from any directory, with the shipped playbook', () => {
    const prefix = join(temp, 'prefix');
    execFileSync('npm', ['link', '--no-audit', '--no-fund'], {
      cwd: ROOT,
      env: { ...process.env, npm_config_prefix: prefix },
      stdio: 'pipe',
    });
    const bin = join(prefix, 'bin', 'ibfleet');
    const env = { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH}`, NO_COLOR: '1' };
    expect(execFileSync('ibfleet', ['--version'], { cwd: '/', env, encoding: 'utf8' })).toBe(`${VERSION}\n`);
    const inventory = join(ROOT, 'inventory/fleet.yaml');
    const rendered = execFileSync(bin, ['-i', inventory, 'render', '--hosts', '34'], {
      cwd: '/',
      env,
      encoding: 'utf8',
    });
    expect(rendered).toContain('/etc/ibfleet/ibfleet-routes');
    // The completion script setup installs comes from the linked command.
    expect(execFileSync(bin, ['completion', 'bash'], { cwd: '/', env, encoding: 'utf8' })).toContain(
      'complete -F _ibfleet ibfleet',
    );
  });

  it('npx ibfleet works inside the checkout', () => {
    const out = execFileSync('npx', ['--no-install', 'ibfleet', '--version'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toBe(`${VERSION}\n`);
  });
});
