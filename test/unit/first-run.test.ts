/**
 * The quick start as a new user meets it: the scripts run as root without sudo (a fresh Debian has
 * none) and through sudo otherwise; `ibfleet` works as npm installs it (a global link) from any
 * directory, and as `npx ibfleet` in the checkout. The parts that need root (the demo's refusal,
 * as_root): test/root/unit/first-run.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { CLI } from '../helpers/cli.js';

const ROOT = resolve(CLI, '../..');
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
