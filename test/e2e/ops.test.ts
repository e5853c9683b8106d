/**
 * The verbs an admin reaches for on the fleet, on a three-host lab through the real ssh2 transport
 * and real sshd: `exec` runs a command on the selected hosts as root, folds identical output once
 * (clush -b), names a failing host's exit code, and gives the same as one --json document.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ibfleet, json, type JsonHost, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-ops');
const HOSTS = [16, 34, 40];

type ExecHost = JsonHost & { exitCode: number | null; stdout: string; stderr: string };

noteIfNotRoot('test/e2e/ops.test.ts (exec and offboard on a lab)');

describe.skipIf(!IS_ROOT)('exec on the fleet (needs root)', () => {
  const lab = useLab({ name: LAB.name, mgmtSubnet: LAB.mgmtSubnet, hosts: HOSTS });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-ops-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, '--log', join(work, 'run.log'), ...args], { env: { IBFLEET_PLAIN: '1' } });

  it('identical output folds under one header; a failing host is shown apart with its exit code; exit 1', async () => {
    const same = await run('exec', '--hosts', 'all', '--', 'id', '-u');
    expect(same.stdout.split('\n').slice(0, 3), same.stderr).toEqual(['---------------- 16,34,40 (exit 0)', '0', 'exec: 3 hosts — exit 0: 16,34,40']);
    expect(same.code).toBe(0);

    // One word for the remote shell: the script's quotes and $( ) reach sh -c as written, on 40 only it fails.
    const split = await run('exec', '--hosts', 'all', '--', 'sh', '-c', 'echo "it\'s $(hostname)" | tr a-z A-Z; [ "$(hostname)" != node40 ] || { echo broken >&2; exit 3; }');
    expect(split.stdout.split('\n').slice(0, 8), split.stderr).toEqual([
      "---------------- 16 (exit 0)",
      "IT'S CPUSERVER16",
      "---------------- 34 (exit 0)",
      "IT'S MEMSERVER34",
      "---------------- 40 (exit 3)",
      "IT'S NODE40",
      'broken',
      'exec: 3 hosts — exit 0: 16,34; exit 3: 40',
    ]);
    expect(split.code).toBe(1);
  });

  it('--json: one document, each host with its exit code, stdout and stderr; ok false when a host fails', async () => {
    const result = await run('--json', 'exec', '--hosts', '16,40', '--', 'sh', '-c', 'printf "%s\\n" "$(hostname)"; [ "$(hostname)" != node40 ] || exit 5');
    const doc = json<Omit<JsonRun, 'hosts'> & { hosts: ExecHost[] }>(result);
    expect(doc.command).toBe('exec');
    expect(doc.ok).toBe(false);
    expect(doc.hosts.map((h) => [h.id, h.status, h.exitCode, h.stdout, h.stderr])).toEqual([
      [16, 'ok', 0, 'cpuserver16\n', ''],
      [40, 'failed', 5, 'node40\n', ''],
    ]);
    expect(result.code).toBe(1);
  });

  it('without a command, or without --hosts: usage (exit 2), nothing contacted', async () => {
    expect((await run('exec', '--hosts', 'all')).code).toBe(2);
    const noHosts = await run('exec', '--', 'true');
    expect(noHosts.code).toBe(2);
    expect(noHosts.stderr).toMatch(/needs --hosts/);
  });
});
