/**
 * onboard end to end: the built CLI, the real ssh2 transport, real sshd in lab hosts that are not
 * in the inventory yet, and the kernel state read back from inside each host.
 *
 * Lab: 50 (ibp1s0/ibp2s0, netplan) and 51 (ib0/ib1, NetworkManager) are a new student's pair;
 * 52 is already in the inventory; 53 is a fresh machine for the refusal scenarios.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { labExec } from '../../src/lab/index.js';
import { ibfleet, type CliResult } from '../helpers/cli.js';
import { holdHostLock, runsQueued } from '../helpers/host-lock.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-onboard');
const NAME = LAB.name;
const SUBNET = LAB.mgmtSubnet;
const address = LAB.address;

noteIfNotRoot('test/e2e/onboard.test.ts (onboard against lab hosts)');

interface OnboardJson {
  readonly ok: boolean;
  readonly outcome: string;
  readonly message: string;
  readonly inventoryChange: { change: string; addedHosts: number[]; addedPair: boolean; addedLines: string[] };
  readonly discovered: {
    id: number;
    role: string;
    os: string;
    manager: string;
    managerSource: string;
    interfaces: { nic: number; iface: string; address: string }[];
  }[];
  readonly hosts: { id: number; status: string; manager: string }[];
  readonly matrix: {
    from: { host: number; iface: string };
    to: { host: number; iface: string };
    ok: boolean | null;
    method: string;
    detail: string;
  }[];
  readonly cheatSheet: {
    ping: { on: string; command: string; checked: string }[];
    rping: { on: string; command: string; clients: { on: string; command: string }[] }[];
    notes: string[];
  };
}

function parse(result: CliResult): OnboardJson {
  try {
    return JSON.parse(result.stdout) as OnboardJson;
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}

describe.skipIf(!IS_ROOT)('onboard against real lab hosts (needs root)', () => {
  // Machines without an RDMA device (no driver or rdma-core): rping is skipped with the reason.
  const lab = useLab({
    name: NAME,
    mgmtSubnet: SUBNET,
    hosts: [50, 51, 52, 53],
    managers: { 51: 'networkmanager' },
    interfaces: { 50: ['ibp1s0', 'ibp2s0'] },
    noRdma: [50, 51, 52, 53],
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-onboard-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const sh = async (id: number, script: string) => (await labExec(NAME, id, ['sh', '-c', script])).stdout.trim();
  const rules = (id: number) => sh(id, 'ip -4 rule show');

  /**
   * A copy of the lab's inventory without the machines a student is about to get: the ssh: paths
   * made absolute (key and known_hosts stay the lab's), a comment of our own on top.
   */
  const studentInventory = (file: string, edit: (text: string) => string = (t) => t) => {
    const text = readFileSync(lab().inventoryPath, 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`)
      .replace(/^ {2}(50|51|53): .*\n/gm, '');
    const path = join(work, file);
    writeFileSync(path, edit(`# lab inventory kept by the admins — onboard must keep this comment\n${text}`));
    return path;
  };

  it('two fresh machines: discovered, deployed, added with their real interface names and the pair, verified (exit 0)', async () => {
    const inv = studentInventory('fresh.yaml');
    const before = readFileSync(inv, 'utf8');
    const result = await ibfleet([
      '-i',
      inv,
      '--json',
      'onboard',
      '--cpu',
      '50',
      '--mem',
      '51',
      '--owner',
      'alice',
      '--cpu-address',
      address(50),
      '--mem-address',
      address(51),
    ]);
    expect(result.code, result.stderr).toBe(0);
    const doc = parse(result);
    expect(doc).toMatchObject({ ok: true, outcome: 'ok' });
    expect(
      doc.discovered.map((d) => [
        d.id,
        d.role,
        d.manager,
        d.managerSource,
        d.interfaces.map((n) => `${n.iface} ${n.address}`),
      ]),
    ).toEqual([
      [50, 'cpu', 'netplan', 'detected', ['ibp1s0 172.16.50.1', 'ibp2s0 172.16.50.2']],
      [51, 'mem', 'networkmanager', 'detected', ['ib0 172.16.51.1', 'ib1 172.16.51.2']],
    ]);
    expect(doc.hosts.map((h) => [h.id, h.status, h.manager])).toEqual([
      [50, 'changed', 'netplan'],
      [51, 'changed', 'networkmanager'],
    ]);

    // The inventory: the old text plus exactly the added lines; it loads with both hosts and the pair.
    const after = readFileSync(inv, 'utf8');
    expect(doc.inventoryChange).toMatchObject({ change: 'written', addedHosts: [50, 51], addedPair: true });
    const added = doc.inventoryChange.addedLines;
    expect(added[0]).toMatch(
      new RegExp(
        `^ {2}50: \\{name: node50, address: ${LAB.addressPattern}\\.50, role: cpu, interfaces: \\[ibp1s0, ibp2s0\\]\\} # alice's cpu server: Ubuntu [\\d.]+ LTS, netplan \\(detected\\)$`,
      ),
    );
    expect(added[1]).toMatch(
      new RegExp(
        `^ {2}51: \\{name: node51, address: ${LAB.addressPattern}\\.51, role: mem\\} # alice's mem server: .*, networkmanager \\(detected\\)$`,
      ),
    );
    expect(
      after
        .split('\n')
        .filter((l) => !added.includes(l))
        .join('\n'),
    ).toBe(before);
    expect(after).toContain('# lab inventory kept by the admins — onboard must keep this comment\n');
    const fleet = loadInventory(after, inv);
    expect(fleet.hosts.find((h) => h.id === 50)!.nics.map((n) => n.iface)).toEqual(['ibp1s0', 'ibp2s0']);
    expect(fleet.pairs).toEqual([{ owner: 'alice', cpu: 50, mem: 51 }]);

    // The matrix: every ping cell passes; rping is skipped with the reason (no RDMA device), never passed.
    const ping = doc.matrix.filter((c) => c.method === 'ping');
    const rping = doc.matrix.filter((c) => c.method === 'rping');
    expect(ping).toHaveLength(8);
    expect(ping.every((c) => c.ok === true)).toBe(true);
    expect(rping).toHaveLength(8);
    for (const c of rping)
      expect(c).toMatchObject({
        ok: null,
        detail: expect.stringMatching(/^skipped: no RDMA device on (node50|node51)/),
      });

    // The kernel state: one rule per NIC address, in its own table, on both machines.
    expect(await rules(50)).toContain('941:\tfrom 172.16.50.1 lookup 941\n942:\tfrom 172.16.50.2 lookup 942');
    expect(await rules(51)).toContain('941:\tfrom 172.16.51.1 lookup 941\n942:\tfrom 172.16.51.2 lookup 942');
    expect(await sh(51, 'ip -4 route show table 942')).toBe(
      '172.16.0.0/16 dev ib1 proto kernel scope link src 172.16.51.2',
    );

    // The cheat sheet: the seeds' command forms, with the real interface names.
    expect(doc.cheatSheet.ping.filter((c) => c.on === 'node50').map((c) => c.command)).toEqual([
      'ping -c 3 -I ibp1s0 172.16.51.1',
      'ping -c 3 -I ibp1s0 172.16.51.2',
      'ping -c 3 -I ibp2s0 172.16.51.1',
      'ping -c 3 -I ibp2s0 172.16.51.2',
    ]);
    expect(doc.cheatSheet.ping.every((c) => c.checked === 'ok')).toBe(true);
    expect(doc.cheatSheet.rping[0]).toMatchObject({
      on: 'node51',
      command: 'rping -s -a 172.16.51.1 -p 7174 -v',
      clients: [{ on: 'node50', command: 'rping -c -I 172.16.50.1 -a 172.16.51.1 -p 7174 -C 10 -v' }, {}],
    });
    expect(doc.cheatSheet.notes[0]).toMatch(/^rping could not be checked here: no RDMA device/);

    // Every ping command on the sheet works by hand, exactly as the student types it, and ends on its own.
    for (const c of doc.cheatSheet.ping) {
      const id = c.on === 'node50' ? 50 : 51;
      const out = await labExec(NAME, id, ['sh', '-c', c.command], { timeoutMs: 15_000 });
      expect(out.code, `${c.on}: ${c.command}\n${out.stdout}${out.stderr}`).toBe(0);
    }
  });

  it('the same command again (plain text): the inventory is left byte for byte, the cheat sheet is printed, exit 0', async () => {
    const inv = join(work, 'fresh.yaml');
    const before = readFileSync(inv);
    const result = await ibfleet(['-i', inv, 'onboard', '--cpu', '50', '--mem', '51', '--owner', 'alice']);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(inv).equals(before)).toBe(true);
    expect(result.stdout).toContain('inventory: ');
    expect(result.stdout).toMatch(/already lists both hosts and the pair; unchanged/);
    expect(result.stdout).toContain(`alice's machine pair\n  cpu  50  node50  ${address(50)}`);
    expect(result.stdout).toContain('    ping -c 3 -I ibp2s0 172.16.51.2\n');
    expect(result.stdout).toContain('on node51:  rping -s -a 172.16.51.2 -p 7174 -v');
    expect(result.stdout).toMatch(/onboard ok: alice's pair node50 \(50\) and node51 \(51\) is deployed and verified/);
  });

  it("a run holding a machine's lock: onboard waits for it, says so, then decides from what it left (exit 0, one rule per address)", async () => {
    const inv = join(work, 'fresh.yaml');
    await sh(51, 'ip -4 rule del from 172.16.51.2 lookup 942');
    // Another run's change, as the host sees it: the lock held until onboard waits on it, the routing repaired meanwhile.
    const other = await holdHostLock(NAME, 51, 'ip -4 rule add from 172.16.51.2 lookup 942 priority 942');
    const running = ibfleet(['-i', inv, 'onboard', '--cpu', '50', '--mem', '51', '--owner', 'alice']);
    await runsQueued(NAME, 51, 1).finally(other.release);
    const result = await running;
    await other.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('[51 node51] waiting for another ibfleet run');
    expect(result.stdout).toMatch(/^\[51 node51\] unchanged /m);
    expect((await rules(51)).split('\n').filter((l) => l.includes('from 172.16.51.2 lookup'))).toHaveLength(1);
  });

  it('a host number already in the inventory with other data: refused (exit 2), inventory byte-identical, nothing deployed', async () => {
    const rulesBefore = [await rules(52), await rules(53)];

    // Known without contacting anyone: 52 is node52 in the inventory, --cpu-name asks for cpuserver52.
    const inv = studentInventory('conflict.yaml');
    const before = readFileSync(inv);
    const named = await ibfleet([
      '-i',
      inv,
      'onboard',
      '--cpu',
      '52',
      '--mem',
      '53',
      '--owner',
      'bob',
      '--mem-address',
      address(53),
      '--cpu-name',
      'cpuserver52',
    ]);
    expect(named.code).toBe(2);
    expect(named.stderr).toMatch(
      /onboard refused:\n {2}- host 52 is already in .*conflict\.yaml \(line \d+\) with other data: name node52 \(onboard would write cpuserver52\), role \(none\) \(onboard would write cpu\)/,
    );
    expect(named.stderr).toContain('Nothing was contacted');
    expect(readFileSync(inv).equals(before)).toBe(true);

    // Known only from the machine: the inventory says 52 has ibx0/ibx1, the machine has ib0/ib1.
    const inv2 = studentInventory('conflict2.yaml', (t) =>
      t.replace(
        /^ {2}52: .*$/m,
        `  52: { name: cpuserver52, address: ${address(52)}, role: cpu, interfaces: [ibx0, ibx1] }`,
      ),
    );
    const before2 = readFileSync(inv2);
    const found = await ibfleet([
      '-i',
      inv2,
      '--json',
      'onboard',
      '--cpu',
      '52',
      '--mem',
      '53',
      '--owner',
      'bob',
      '--mem-address',
      address(53),
    ]);
    expect(found.code).toBe(2);
    const doc = parse(found);
    expect(doc).toMatchObject({
      ok: false,
      outcome: 'refused',
      hosts: [
        { id: 52, status: 'ok' },
        { id: 53, status: 'ok' },
      ],
    });
    expect(doc.message).toMatch(
      /host 52 is already in .*conflict2\.yaml \(line \d+\) with other data: interfaces ibx0, ibx1 \(onboard would write ib0, ib1\)/,
    );
    expect(found.stderr).toMatch(/Nothing was deployed and .*conflict2\.yaml was not changed/);
    expect(readFileSync(inv2).equals(before2)).toBe(true);

    // Neither machine was touched: not the conflicting one, not its fresh partner.
    expect([await rules(52), await rules(53)]).toEqual(rulesBefore);
    expect(rulesBefore[1]).not.toContain('lookup 941');
    expect(await sh(53, 'ls /etc/ibfleet 2>&1 || true')).toMatch(/No such file/);
  });
});
