/**
 * The real tools the tests read ibfleet's output with: shellcheck on a script as the hosts'
 * /bin/sh runs it, and netplan's generator on a set of netplan files, offline.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

/** shellcheck finds nothing at `level` or above in the script at `path`, read as POSIX sh. */
export function expectShellcheckClean(path: string, level: 'warning' | 'style' = 'warning'): void {
  const check = spawnSync('shellcheck', ['-s', 'sh', '-S', level, path], { encoding: 'utf8' });
  expect(check.stdout + check.stderr).toBe('');
  expect(check.status).toBe(0);
}

/**
 * `netplan generate --root-dir` over `files` (name → text, as /etc/netplan holds them) in a new
 * root under `work`: its exit status, its stderr and, when it succeeded, the files it wrote for
 * systemd-networkd by name.
 */
export function netplanGenerate(
  work: string,
  files: Record<string, string>,
): { status: number | null; stderr: string; network: Record<string, string> } {
  const root = mkdtempSync(join(work, 'root-'));
  mkdirSync(join(root, 'etc/netplan'), { recursive: true });
  for (const [name, text] of Object.entries(files))
    writeFileSync(join(root, 'etc/netplan', name), text, { mode: 0o600 });
  const result = spawnSync('netplan', ['generate', '--root-dir', root], { encoding: 'utf8' });
  const dir = join(root, 'run/systemd/network');
  const network =
    result.status === 0 ? Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), 'utf8')])) : {};
  return { status: result.status, stderr: result.stderr, network };
}
