/**
 * The links step end to end, on each real manager: machines as they arrive (lab up --fresh — the
 * fabric NICs present, no address, nothing configuring them) beside two configured ones. One
 * deploy takes the fresh hosts from no address to the full matrix; it survives a boot and a
 * manager restart; rollback makes them fresh again; a conflicting address, an interfaces file that
 * does not source interfaces.d and connected mode on an enhanced-IPoIB (mlx5) HCA each refuse the
 * host before anything changes and leave the others deployed; onboard takes a fresh pair from
 * nothing to a verified pair in the inventory.
 *
 * Lab: 60 netplan, 61 NetworkManager, 62 ifupdown — fresh; 63 NetworkManager and 64 netplan as
 * the lab configures them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec, labReboot, labRestartManager } from '../../src/lab/index.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, testSuite, useLab } from '../lab/helpers.js';
import { withSlowNetworkd } from './native.js';

const LAB = testLab('e2e-links');
const FRESH = [60, 61, 62];
const HOSTS = [...FRESH, 63, 64];
/** How long the managers may take to bring the NICs up after a boot or restart, on a loaded machine. */
const SETTLE_MS = 30_000;

noteIfNotRoot('test/e2e/links.test.ts (links on fresh lab hosts)');

describe.skipIf(!IS_ROOT)('links: fresh machines to the full matrix on every real manager (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 61: 'networkmanager', 62: 'ifupdown', 63: 'networkmanager' },
    fresh: FRESH,
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-links-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const sh = async (id: number, script: string) => (await labExec(LAB.name, id, ['sh', '-c', script])).stdout.trim();
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  /** A copy of the lab's inventory (ssh: paths made absolute) with `edit` applied. */
  const variant = (name: string, edit: (text: string) => string = (t) => t) => {
    const text = readFileSync(lab().inventoryPath, 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`);
    const path = join(work, name);
    writeFileSync(path, edit(text));
    return path;
  };
  /**
   * What a fresh host's NICs and their configuration look like: addresses, netplan files, stanzas,
   * ibfleet's files (its kept previous versions aside), NetworkManager's profiles.
   */
  const nicState = (id: number) =>
    sh(
      id,
      "ip -4 -o addr show | grep -E ' ib[01] ' || true; ls /etc/netplan /etc/network/interfaces.d 2>/dev/null; ls /etc/ibfleet 2>/dev/null | grep -v '^previous$'; [ -d /run/NetworkManager ] && nmcli -t -f NAME,TYPE,DEVICE connection show; true",
    );
  const allOk = async (inventory = lab().inventoryPath) => {
    const doc = json(await ibfleet(['-i', inventory, 'status', '--json']));
    return {
      ok: Object.values(statuses(doc)).every((s) => s === 'ok'),
      reasons: doc.hosts.flatMap((h) => h.reasons.map((r) => `${h.id}: ${r}`)),
    };
  };
  const untilOk = async (inventory?: string) => {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const s = await allOk(inventory);
      if (s.ok) return;
      if (Date.now() > deadline) expect(s.reasons, 'status').toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const fullMatrix = async (...args: string[]) => {
    const doc = json<JsonRun>(await run('verify', '--hosts', 'all', '--json', ...args));
    expect(doc.matrix!.filter((c) => !c.ok).map((c) => `${c.from.ip} → ${c.to.ip} (${c.method}): ${c.detail}`)).toEqual(
      [],
    );
    return doc.matrix!.length;
  };

  it('fresh hosts: their NICs carry no address and nothing configures them; status says what links does', async () => {
    for (const id of FRESH)
      expect(await sh(id, "ip -4 -o addr show | grep -E ' ib[01] ' || echo none"), `host ${id}`).toBe('none');
    expect(await sh(61, 'ls /etc/NetworkManager/system-connections')).toBe('');
    expect(await sh(60, 'cat /etc/netplan/99-netcfg.yaml')).not.toContain('ib0');
    const doc = json(await run('status', '--json'));
    const reasons = (id: number) => doc.hosts.find((h) => h.id === id)!.reasons;
    expect(reasons(61)).toContain('ib0: no connection profile (ibfleet adds ibfleet-ib0)');
    expect(reasons(60)).toContain('ib0 is down (no 172.16.60.1)');
    expect(reasons(62)).toContain('links file /etc/network/interfaces.d/ibfleet-links is missing');
    expect(doc.hosts.map((h) => (h as { notDeployed?: boolean }).notDeployed)).toEqual(HOSTS.map(() => true));
    // As text: not two dozen drift lines a host, but one line with the command that is the fix.
    const text = await run('status');
    expect(text.code).toBe(1);
    expect(text.stdout.split('\n').filter((l) => /^\d/.test(l))).toEqual([
      `60-64: not deployed — ibfleet deploy -i ${lab().inventoryPath} --hosts 60-64`,
    ]);
    expect(text.stdout).toMatch(/^summary: 5 not deployed · /m);
    // verify says the same of a fresh host's NICs that are down: deploy them, not `ip link set … up`.
    const verified = json<JsonRun>(await run('verify', '--hosts', 'all', '--no-rping', '--json'));
    const causes = verified.matrix!.flatMap((c) => c.causes ?? []);
    expect(causes.filter((c) => c.text.includes('bring it up'))).toEqual([]);
    const down = causes.filter((c) => c.kind === 'link-down');
    expect(down.length).toBeGreaterThan(0);
    for (const c of down)
      expect(c.text).toBe(
        `${c.host}/${c.iface} is down, without its address: not deployed yet (ibfleet deploy -i ${lab().inventoryPath} --hosts ${c.host} configures it)`,
      );
  });

  it('a playbook without links refuses them, as before, and changes nothing', async () => {
    const path = join(work, 'no-links.yaml');
    writeFileSync(
      path,
      readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8')
        .replace('  - links\n', '')
        .replace('name: dual-ib-routing', 'name: no-links'),
    );
    const before = await Promise.all(FRESH.map(nicState));
    const doc = json(await run('deploy', '--hosts', '60-62', '--playbook', path, '--json'));
    expect(doc.hosts.map((h) => [h.id, h.status, h.error])).toEqual([
      [60, 'failed', 'plan: ib0 is down (no 172.16.60.1); ib1 is down (no 172.16.60.2)'],
      [
        61,
        'failed',
        'plan: ib0 carries no IPv4 address, but the convention gives NIC 1 of host 61 172.16.61.1/16; ib1 carries no IPv4 address, but the convention gives NIC 2 of host 61 172.16.61.2/16',
      ],
      [62, 'failed', 'plan: ib0 is down (no 172.16.62.1); ib1 is down (no 172.16.62.2)'],
    ]);
    expect(await Promise.all(FRESH.map(nicState))).toEqual(before);
  });

  it('one deploy --hosts all takes the fresh hosts from no address to the full matrix; the configured ones get their routing', async () => {
    // Host 60's networkd slowed (each of its reads held 200 ms, as on a loaded machine): it switches
    // the NICs to netplan's file well after `networkctl reload` returned, and the change waits for
    // that rather than taking them for NICs the reload left alone and having networkd configure them
    // a second time (which dropped their addresses under the routing, now and then, under load).
    const deployed = await withSlowNetworkd(
      LAB.name,
      60,
      () => run('deploy', '--hosts', 'all', '--json'),
      200,
      'recvmsg',
    );
    const doc = json(deployed);
    expect(
      doc.hosts.map((h) => [h.id, h.status, h.error]),
      deployed.stderr,
    ).toEqual(HOSTS.map((id) => [id, 'changed', null]));
    expect((await allOk()).reasons).toEqual([]);
    // Ten NICs, each to the eight of the other hosts, by ping and by the rping stand-in.
    expect(await fullMatrix()).toBe(10 * 8 * 2);

    const nm = await sh(
      61,
      'nmcli -g connection.type,ipv4.addresses,infiniband.transport-mode connection show ibfleet-ib0',
    );
    const netplan = await sh(60, 'cat /etc/netplan/50-ibfleet-links.yaml');
    const stanza = await sh(62, 'cat /etc/network/interfaces.d/ibfleet-links');
    // The lab's NICs are veths: NetworkManager sees Ethernet, so the profile is an ethernet one here (an infiniband one on IPoIB).
    expect(nm.split('\n').slice(0, 2)).toEqual(['802-3-ethernet', '172.16.61.1/16']);
    expect(netplan).toContain('    ib0:\n      # NIC 1\n      renderer: networkd\n      addresses: [172.16.60.1/16]\n');
    expect(stanza).toContain('auto ib1\niface ib1 inet static\n\taddress 172.16.62.2/16');
    // The configured hosts' NICs are left as they are: no profile, file or stanza of ibfleet's.
    expect(await sh(63, 'nmcli -t -f NAME connection show | sort')).toBe('ib0\nib1');
    expect(await sh(64, 'ls /etc/netplan')).toBe('99-netcfg.yaml');
  });

  it('a second deploy changes nothing', async () => {
    const doc = json(await run('deploy', '--hosts', 'all', '--json'));
    expect(doc.hosts.map((h) => h.status)).toEqual(HOSTS.map(() => 'unchanged'));
  });

  it('a boot: each manager brings the NICs up from its own configuration; status ok, the matrix full', async () => {
    const reboots = await labReboot(LAB.name, HOSTS);
    expect(reboots.map((r) => [r.id, r.ok])).toEqual(HOSTS.map((id) => [id, true]));
    await untilOk();
    expect(await fullMatrix()).toBe(160);
  });

  it('a restart of each manager: status ok, the matrix full', async () => {
    // The hosts' managers at once, each on its own host as an admin's restart would be: one wait for
    // networkd's ~12 s IPv6 solicitations (manager-boot.ts) instead of one after another's.
    await Promise.all(FRESH.map((id) => labRestartManager(LAB.name, id)));
    await untilOk();
    expect(await fullMatrix()).toBe(160);
  });

  it("rollback makes the fresh hosts fresh again: no address, no profile, file or stanza of ibfleet's", async () => {
    const doc = json(await run('rollback', '--hosts', '60-62', '--json'));
    expect(doc.hosts.map((h) => [h.id, h.status])).toEqual(FRESH.map((id) => [id, 'changed']));
    // Said as deploy said it: each NIC's address goes, and no main-table route comes back through a NIC without one.
    const said = (h: (typeof doc.hosts)[number], kind: string) =>
      (h.changes ?? []).filter((c) => c.kind === kind).map((c) => `${c.action} ${c.subject}`);
    expect(doc.hosts.map((h) => said(h, 'link-address'))).toEqual(FRESH.map(() => ['remove ib0', 'remove ib1']));
    expect(doc.hosts.map((h) => said(h, 'main-route'))).toEqual(FRESH.map(() => []));
    // Counted as deploy counts them, key by key: 8 sysctls set, 8 reset (not "2", the NICs).
    expect(doc.hosts.map((h) => said(h, 'sysctl'))).toEqual(
      FRESH.map(() => [...Array(4).fill('reset ib0'), ...Array(4).fill('reset ib1')]),
    );
    expect(await nicState(60)).toBe('/etc/netplan:\n99-netcfg.yaml');
    expect(await nicState(61)).toBe('/etc/netplan:\n01-network-manager-all.yaml');
    expect(await nicState(62)).toBe('/etc/network/interfaces.d:');
    // netplan's NICs were down when they arrived: down again.
    expect(await sh(60, 'ip -o link show dev ib0')).not.toMatch(/[<,]UP[,>]/);
    expect(json(await run('rollback', '--hosts', '60-62', '--json')).hosts.map((h) => h.status)).toEqual(
      FRESH.map(() => 'unchanged'),
    );
    // The configured hosts stay deployed.
    const status = json(await run('status', '--hosts', '63-64', '--json'));
    expect(status.hosts.map((h) => h.status)).toEqual(['ok', 'ok']);
  });

  it('refused before anything changes, the others left deployed: a conflicting address, an unsourced interfaces.d, connected mode on mlx5', async () => {
    await sh(61, 'ip addr add 172.16.61.9/16 dev ib0');
    await sh(62, "sed -i '/^source /d' /etc/network/interfaces");
    const inventory = variant('connected.yaml', (t) =>
      t.replace('60: {name: node60, address:', '60: {links: {mode: connected}, name: node60, address:'),
    );
    try {
      const before = await Promise.all(FRESH.map(nicState));
      const result = await ibfleet(['-i', inventory, 'deploy', '--hosts', 'all', '--json']);
      expect(result.code).toBe(1);
      const doc = json(result);
      const error = (id: number) => doc.hosts.find((h) => h.id === id)!.error ?? '';
      expect(error(60)).toContain(
        'plan: ib0: mode connected is refused: ib0 runs enhanced IPoIB (mlx5_0, ConnectX-4 or later;',
      );
      expect(error(61)).toBe(
        'plan: ib0 carries 172.16.61.9/16, but the convention gives NIC 1 of host 61 172.16.61.1/16',
      );
      expect(error(62)).toBe(
        'plan: /etc/network/interfaces does not source /etc/network/interfaces.d, where ibfleet puts the stanzas for ib0, ib1; add the line "source /etc/network/interfaces.d/*" to it (Debian\'s default has it)',
      );
      expect(doc.hosts.filter((h) => h.id > 62).map((h) => h.status)).toEqual(['unchanged', 'unchanged']);
      expect(await Promise.all(FRESH.map(nicState))).toEqual(before);
    } finally {
      await sh(61, 'ip addr del 172.16.61.9/16 dev ib0');
      await sh(62, "sed -i '1i source /etc/network/interfaces.d/*' /etc/network/interfaces");
    }
  });

  it('onboard --cpu 61 --mem 60 --owner bob: from nothing to a verified pair in the inventory, which a boot keeps', async () => {
    // From fresh hosts, as the rollback above left them, on a retry too (CI runs a failed lab story
    // once more): an attempt that got as far as onboard left 60 and 61 deployed.
    const fresh = json(await run('rollback', '--hosts', '60,61', '--json'));
    expect(fresh.ok, JSON.stringify(fresh.hosts)).toBe(true);
    const inventory = join(work, 'students.yaml');
    writeFileSync(
      inventory,
      `# The lab's students (comments stay).\nfabric:\n  subnet: 172.16.0.0/16\n  nics: 2\ndefaults:\n  user: root\nssh:\n  knownHosts: ${lab().knownHostsPath}\n  identityFile: ${lab().identityPath}\nhosts: {}\n`,
    );
    // Host 60 was rolled back: networkd 247 still names netplan's file for its unmanaged NICs, and,
    // slowed, switches them only well after the reload returned (the change waits for it).
    const onboard = await withSlowNetworkd(
      LAB.name,
      60,
      () =>
        ibfleet([
          '-i',
          inventory,
          'onboard',
          '--cpu',
          '61',
          '--mem',
          '60',
          '--owner',
          'bob',
          '--cpu-address',
          LAB.address(61),
          '--mem-address',
          LAB.address(60),
        ]),
      200,
      'recvmsg',
    );
    expect(onboard.code, onboard.stdout + onboard.stderr).toBe(0);
    expect(onboard.stdout).toContain('NIC 1 ib0 no address yet (gets 172.16.61.1/16)');
    expect(onboard.stdout).toContain('rping -c -I 172.16.61.2 -a 172.16.60.2 -p 7174 -C 10 -v');
    const text = readFileSync(inventory, 'utf8');
    expect(text).toContain("# The lab's students (comments stay).");
    // The OS onboard read off the host: the release netplan hosts emulate, or the suite's own (test/e2e/on-suite).
    const os = testSuite() === undefined ? 'Ubuntu 18\\.04\\.6 LTS' : `Debian GNU/Linux \\d+ \\(${testSuite()}\\)`;
    expect(text).toMatch(
      new RegExp(
        `60: \\{ name: node60, address: [\\d.]+, role: mem \\} # bob's mem server: ${os}, netplan \\(detected\\)`,
      ),
    );
    expect(text).toContain('  - { owner: bob, cpu: 61, mem: 60 }');
    const verify = json<JsonRun>(await ibfleet(['-i', inventory, 'verify', '--pair', 'bob', '--rping', '--json']));
    expect(verify.matrix!.filter((c) => !c.ok)).toEqual([]);
    expect(new Set(verify.matrix!.map((c) => c.method))).toEqual(new Set(['ping', 'rping']));

    const reboots = await labReboot(LAB.name, [60, 61]);
    expect(reboots.every((r) => r.ok)).toBe(true);
    await untilOk(inventory);
    const after = json<JsonRun>(await ibfleet(['-i', inventory, 'verify', '--pair', 'bob', '--rping', '--json']));
    expect(after.matrix!.filter((c) => !c.ok)).toEqual([]);
    expect(after.matrix!.length).toBe(verify.matrix!.length);
  });
});
