/**
 * The verbs an admin reaches for on the fleet, on a three-host lab through the real ssh2 transport
 * and real sshd: `exec` runs a command on the selected hosts as root, folds identical output once
 * (clush -b), names a failing host's exit code, and gives the same as one --json document.
 * `offboard` rolls a deployed host back and takes it out of a copy of the lab's inventory (every
 * other byte kept) and out of its known_hosts; a host whose rollback fails stays in.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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
  const run = (...args: string[]) =>
    ibfleet(['-i', lab().inventoryPath, '--log', join(work, 'run.log'), ...args], { env: { IBFLEET_PLAIN: '1' } });

  it('identical output folds under one header; a failing host is shown apart with its exit code; exit 1', async () => {
    const same = await run('exec', '--hosts', 'all', '--', 'id', '-u');
    expect(same.stdout.split('\n').slice(0, 3), same.stderr).toEqual([
      '---------------- 16,34,40 (exit 0)',
      '0',
      'exec: 3 hosts — exit 0: 16,34,40',
    ]);
    expect(same.code).toBe(0);

    // One word for the remote shell: the script's quotes and $( ) reach sh -c as written, on 40 only it fails.
    const split = await run(
      'exec',
      '--hosts',
      'all',
      '--',
      'sh',
      '-c',
      'echo "it\'s $(hostname)" | tr a-z A-Z; [ "$(hostname)" != node40 ] || { echo broken >&2; exit 3; }',
    );
    expect(split.stdout.split('\n').slice(0, 8), split.stderr).toEqual([
      '---------------- 16 (exit 0)',
      "IT'S CPUSERVER16",
      '---------------- 34 (exit 0)',
      "IT'S MEMSERVER34",
      '---------------- 40 (exit 3)',
      "IT'S NODE40",
      'broken',
      'exec: 3 hosts — exit 0: 16,34; exit 3: 40',
    ]);
    expect(split.code).toBe(1);
  });

  it('--json: one document, each host with its exit code, stdout and stderr; ok false when a host fails', async () => {
    const result = await run(
      '--json',
      'exec',
      '--hosts',
      '16,40',
      '--',
      'sh',
      '-c',
      'printf "%s\\n" "$(hostname)"; [ "$(hostname)" != node40 ] || exit 5',
    );
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

  /** A copy of the lab's inventory with a comment of the admin's, its own known_hosts, and 34 at `address34`. */
  const copy = (address34 = LAB.address(34)) => {
    const dir = mkdtempSync(join(work, 'inv-'));
    const labDir = dirname(lab().inventoryPath);
    copyFileSync(lab().knownHostsPath, join(dir, 'known_hosts'));
    const text = readFileSync(lab().inventoryPath, 'utf8')
      .replace('identityFile: id_ed25519', `identityFile: ${join(labDir, 'id_ed25519')}`)
      .replace('hosts:\n', "hosts:\n  # the admin's note, kept\n")
      .replace(`address: ${LAB.address(34)},`, `address: ${address34},`);
    writeFileSync(join(dir, 'inventory.yaml'), text);
    return { inventory: join(dir, 'inventory.yaml'), knownHosts: join(dir, 'known_hosts'), text };
  };

  it(
    'offboard --hosts 40: rolled back (nothing of ibfleet left on it), its line and known_hosts entry gone, every other byte kept',
    { timeout: 120_000 },
    async () => {
      const inv = copy();
      expect((await ibfleet(['-i', inv.inventory, '--no-log', 'deploy', '--hosts', '40'])).code).toBe(0);
      const result = await ibfleet(['-i', inv.inventory, '--no-log', '--json', 'offboard', '--hosts', '40']);
      const doc = JSON.parse(result.stdout) as {
        ok: boolean;
        rollback: JsonRun;
        removed: { hosts: number[]; pairs: unknown[] };
        knownHosts: { removed: number };
      };
      expect(
        doc.rollback.hosts.map((h) => [h.id, h.status]),
        result.stderr,
      ).toEqual([[40, 'changed']]);
      expect(doc.removed).toMatchObject({ hosts: [40], pairs: [] });
      expect(doc.knownHosts.removed).toBe(1);
      expect(result.code).toBe(0);
      const line40 = inv.text.split('\n').find((l) => l.startsWith('  40: '))!;
      expect(readFileSync(inv.inventory, 'utf8')).toBe(inv.text.replace(`${line40}\n`, ''));
      expect(readFileSync(inv.knownHosts, 'utf8')).not.toMatch(new RegExp(`^${LAB.addressPattern}\\.40 `, 'm'));
      expect(readFileSync(inv.knownHosts, 'utf8')).toMatch(new RegExp(`^${LAB.addressPattern}\\.16 `, 'm'));
      // The host itself, asked through the lab's own inventory: none of ibfleet's files left.
      const status = json(await run('--json', 'status', '--hosts', '40'));
      expect((status.hosts[0] as JsonHost & { notDeployed?: boolean }).notDeployed).toBe(true);
    },
  );

  it(
    'offboard --pair alice with 34 unreachable: 16 rolled back and removed, the pair goes, 34 stays with why (exit 1)',
    { timeout: 120_000 },
    async () => {
      const inv = copy(`${LAB.address(34).replace(/\.34$/, '.99')}`);
      const result = await ibfleet(['-i', inv.inventory, '--no-log', '--timeout', '3', 'offboard', '--pair', 'alice'], {
        env: { IBFLEET_PLAIN: '1' },
      });
      expect(result.stdout).toMatch(/removed from .*inventory\.yaml: host 16; alice's pair \(cpu 16, mem 34\)/);
      expect(result.stdout).toMatch(
        /kept 34 in the inventory: its rollback failed: .*offboard --hosts 34 --no-rollback/,
      );
      expect(result.code).toBe(1);
      const after = readFileSync(inv.inventory, 'utf8');
      expect(after).toMatch(/^ {2}34: /m);
      expect(after).not.toMatch(/^ {2}16: |owner: alice|^pairs:/m);
      expect(after).toContain("# the admin's note, kept");
    },
  );
});
