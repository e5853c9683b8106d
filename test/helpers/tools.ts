/**
 * The real tools the tests read ibfleet's output with: shellcheck on a script as the hosts'
 * /bin/sh runs it, and netplan's generator on a set of netplan files, offline.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

/**
 * What every shell file ibfleet writes or sends is checked with, in one place and at one severity:
 * `style`, everything shellcheck has to say. Two notes are known false readings of how ibfleet
 * writes scripts, and left out everywhere:
 * - SC2317 (unreachable command): a change script's helpers are called from inside its
 *   received-whole wrapper function, and the routing program calls its per-row functions by name;
 * - SC1003 (escaping a single quote): a file a change script writes travels inside single quotes,
 *   where the file's own `'\''` reads to shellcheck as an attempt to escape one;
 * - SC1113 (a mistyped #!): a sourced file (NHC's check) opens with ibfleet's header, no #! line.
 */
const SHELLCHECK_EXCLUDED = 'SC2317,SC1003,SC1113';

/**
 * shellcheck finds nothing in the file at `path`, read as POSIX sh (or `shell`). Fails, never
 * skips, where shellcheck is not installed: a shell file nobody has checked must not look green.
 */
export function expectShellcheckClean(path: string, shell: 'sh' | 'bash' = 'sh'): void {
  const check = spawnSync('shellcheck', ['-s', shell, '-S', 'style', '-e', SHELLCHECK_EXCLUDED, path], {
    encoding: 'utf8',
  });
  if (check.error) throw new Error(`shellcheck is not installed (apt-get install shellcheck): ${check.error.message}`);
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
