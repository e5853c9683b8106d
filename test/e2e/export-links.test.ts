/**
 * `ibfleet export ansible` and the links step, with the real ansible-playbook on machines as they
 * arrive (lab up --fresh: the fabric NICs present, nothing configuring them), one per manager: 16
 * NetworkManager (ibfleet's profile through nmcli), 73 NetworkManager 1.30 on Debian 11 (nmcli there
 * cannot give a new profile its uuid: ibfleet's keyfile), 34 netplan (its 50-ibfleet-links.yaml), 40
 * ifupdown (its interfaces.d stanza). The exported role alone — no deploy before — gives each NIC
 * its address through the host's own manager, then the routing; a second run changes nothing; the
 * NICs come back at the next boot, the full matrix passes, and rollback leaves the hosts fresh. A
 * host whose own configuration is in the way is refused by the role with nothing changed; after a
 * deploy the role leaves what links wrote as deploy wrote it; a playbook whose links asks what only
 * deploy's probe can decide is refused before anything is written.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec, labReboot } from '../../src/lab/index.js';
import { ansiblePlaybook, changedOf } from '../helpers/ansible.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, labSsh, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-export-links');
const HOSTS = [16, 34, 40, 73];
/** What links writes on each host: the record everywhere, ibfleet's netplan file on 34, its stanza file on 40. */
const LINKS_FILES = '/etc/ibfleet/links /etc/netplan/50-ibfleet-links.yaml /etc/network/interfaces.d/ibfleet-links';
/** How long the managers may take to bring the NICs up after a boot, on a loaded machine. */
const SETTLE_MS = 30_000;
/** ansible-playbook runs take ~30 s here, and minutes on a machine others load heavily. */
const ANSIBLE_TIMEOUT_MS = 300_000;

noteIfNotRoot('test/e2e/export-links.test.ts (the exported Ansible role provisions fresh hosts)');

describe.skipIf(!IS_ROOT)('export ansible: the role gives fresh hosts their NICs, as deploy does (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 16: 'networkmanager', 34: 'netplan', 40: 'ifupdown', 73: 'networkmanager' },
    fresh: HOSTS,
    suites: { hosts: { 73: 'bullseye' } },
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-export-links-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const project = join(work, 'project');
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, '--no-log', ...args]);
  const sh = async (id: number, script: string) => (await labExec(LAB.name, id, ['sh', '-c', script])).stdout;
  /** links' files on a host, with their content: what a boot brings the NICs up from. */
  const linksFiles = (id: number) =>
    sh(id, `for f in ${LINKS_FILES}; do [ ! -e "$f" ] || { echo "== $f"; cat "$f"; }; done`);
  const untilOk = async () => {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const doc = json(await run('status', '--json'));
      if (Object.values(statuses(doc)).every((s) => s === 'ok')) return;
      if (Date.now() > deadline)
        expect(
          doc.hosts.flatMap((h) => h.reasons.map((r) => `${h.id}: ${r}`)),
          'status',
        ).toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  const play = (...args: string[]) => ansiblePlaybook(project, { cwd: work, controlDir: work }, ...args);
  const names = () => lab().hosts.map((h) => h.name);
  /** Each fabric NIC's IPv4 addresses, `iface=address/prefix` (nothing after an = where it has none). */
  const fabricAddresses = (id: number) => {
    const nics = lab().hosts.find((h) => h.id === id)!.nics;
    return sh(
      id,
      nics
        .map((n) => `printf '%s=%s\\n' ${n.iface} "$(ip -4 -o addr show dev ${n.iface} | awk '{ print $4 }')"`)
        .join('; '),
    );
  };
  const conventionAddresses = (id: number) =>
    lab()
      .hosts.find((h) => h.id === id)!
      .nics.map((n) => `${n.iface}=${n.address}/${n.prefixLength}\n`)
      .join('');
  const bare = (id: number) =>
    lab()
      .hosts.find((h) => h.id === id)!
      .nics.map((n) => `${n.iface}=\n`)
      .join('');
  /** What ibfleet keeps on a host, and the keyfiles of ibfleet's profiles: nothing on a fresh machine. */
  const ibfleetThere = (id: number) =>
    sh(id, 'ls -d /etc/ibfleet /etc/NetworkManager/system-connections/ibfleet-* ' + LINKS_FILES + ' 2>/dev/null; true');

  it(
    'fresh hosts: ansible-playbook alone gives each NIC its address through the host manager, then the routing (failed=0); status ok',
    { timeout: ANSIBLE_TIMEOUT_MS },
    async () => {
      const exported = await run('export', 'ansible', '--hosts', 'all', '--out', project);
      expect(exported.code, exported.stderr).toBe(0);
      const played = await play();
      expect(played.code, played.out).toBe(0);
      for (const name of names()) expect(played.recap[name], played.out).toMatchObject({ failed: 0, unreachable: 0 });
      expect(await Promise.all(HOSTS.map(fabricAddresses))).toEqual(HOSTS.map(conventionAddresses));
      // Each in the manager's own configuration, as deploy writes it: the record says how.
      const records = await Promise.all(HOSTS.map((id) => sh(id, "grep '^nic ' /etc/ibfleet/links")));
      expect(
        records.map((r) =>
          r
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(' ').slice(0, 3).join(' ')),
        ),
      ).toEqual(
        HOSTS.map((id) => {
          const host = lab().hosts.find((h) => h.id === id)!;
          return host.nics.map((n) => `nic ${n.iface} ${host.manager}`);
        }),
      );
      expect((await linksFiles(34)).match(/^== \S+$/gm)).toEqual([
        '== /etc/ibfleet/links',
        '== /etc/netplan/50-ibfleet-links.yaml',
      ]);
      expect((await linksFiles(40)).match(/^== \S+$/gm)).toEqual([
        '== /etc/ibfleet/links',
        '== /etc/network/interfaces.d/ibfleet-links',
      ]);
      // NetworkManager, 1.52 and 1.30 alike: the profile under the uuid the record names (1.30: ibfleet's keyfile).
      for (const id of [16, 73]) {
        const host = lab().hosts.find((h) => h.id === id)!;
        const uuids = records[HOSTS.indexOf(id)]!.split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ')[3]);
        const shown = await labSsh(lab(), id, 'nmcli -t -f UUID,DEVICE connection show --active');
        const fabric = shown.stdout.split('\n').filter((l) => host.nics.some((n) => l.endsWith(`:${n.iface}`)));
        expect(fabric.sort()).toEqual(host.nics.map((n, i) => `${uuids[i]}:${n.iface}`).sort());
      }
      await untilOk();
    },
  );

  it('a second run changes nothing (changed=0 on every host)', { timeout: ANSIBLE_TIMEOUT_MS }, async () => {
    const played = await play();
    expect(played.code, played.out).toBe(0);
    expect(changedOf(played.recap)).toEqual(Object.fromEntries(names().map((n) => [n, 0])));
  });

  it(
    'a boot after the Ansible run: each manager brings the NICs up from what the role wrote; status ok, the full matrix passes',
    { timeout: 120_000 },
    async () => {
      const reboots = await labReboot(LAB.name, HOSTS);
      expect(reboots.map((r) => [r.id, r.ok])).toEqual(HOSTS.map((id) => [id, true]));
      await untilOk();
      const verified = await run('verify', '--hosts', 'all', '--json');
      const doc = json<JsonRun>(verified);
      expect(
        doc.matrix!.filter((c) => !c.ok).map((c) => `${c.from.ip} → ${c.to.ip} (${c.method}): ${c.detail}`),
      ).toEqual([]);
      // Eight NICs, each to the six of the other hosts, by ping and by the rping stand-in.
      expect(doc.matrix!.length).toBe(8 * 6 * 2);
      expect(verified.code).toBe(0);
    },
  );

  it('ibfleet rollback leaves the hosts as they arrived: no address on a fabric NIC, nothing of ibfleet', async () => {
    const rolledBack = await run('rollback', '--hosts', 'all', '--json');
    expect(
      json(rolledBack).hosts.map((h) => [h.id, h.status, h.error]),
      rolledBack.stderr,
    ).toEqual(HOSTS.map((id) => [id, 'changed', null]));
    expect(await Promise.all(HOSTS.map(fabricAddresses))).toEqual(HOSTS.map(bare));
    expect(await Promise.all(HOSTS.map(ibfleetThere))).toEqual(HOSTS.map(() => ''));
  });

  it(
    'a host whose own profile applies to a NIC is refused by the role, naming it; nothing is changed there',
    { timeout: ANSIBLE_TIMEOUT_MS },
    async () => {
      const nic = lab().hosts.find((h) => h.id === 16)!.nics[0]!.iface;
      const added = await labSsh(
        lab(),
        16,
        `nmcli -t connection add type ethernet con-name mine ifname ${nic} ipv4.method disabled ipv6.method ignore connection.autoconnect no`,
      );
      expect(added.code, added.stderr).toBe(0);
      try {
        const played = await play('--limit', 'cpuserver16');
        expect(played.recap['cpuserver16'], played.out).toMatchObject({ failed: 1, changed: 0 });
        expect(played.out).toMatch(
          new RegExp(
            `ibfleet: links: ${nic}: connection profile [0-9a-f-]{36} \\(/etc/NetworkManager/system-connections/mine\\.nmconnection\\) applies to it`,
          ),
        );
        expect(await fabricAddresses(16)).toEqual(bare(16));
        expect(await ibfleetThere(16)).toBe('');
      } finally {
        await labSsh(lab(), 16, 'nmcli connection delete mine');
      }
    },
  );

  it(
    'deploy provisions the NICs; the exported role then runs (failed=0) and leaves every file links wrote as deploy wrote it',
    { timeout: ANSIBLE_TIMEOUT_MS },
    async () => {
      const deployed = await run('deploy', '--hosts', 'all', '--json');
      expect(
        json(deployed).hosts.map((h) => [h.id, h.status, h.error]),
        deployed.stderr,
      ).toEqual(HOSTS.map((id) => [id, 'changed', null]));
      const before = await Promise.all(HOSTS.map(linksFiles));
      expect(before.map((text) => text.match(/^== \S+$/gm))).toEqual([
        ['== /etc/ibfleet/links'],
        ['== /etc/ibfleet/links', '== /etc/netplan/50-ibfleet-links.yaml'],
        ['== /etc/ibfleet/links', '== /etc/network/interfaces.d/ibfleet-links'],
        ['== /etc/ibfleet/links'],
      ]);
      const played = await play();
      expect(played.code, played.out).toBe(0);
      expect(changedOf(played.recap)).toEqual(Object.fromEntries(names().map((n) => [n, 0])));
      expect(await Promise.all(HOSTS.map(linksFiles))).toEqual(before);
      await untilOk();
    },
  );

  it('a playbook whose links asks for an MTU is refused (exit 2), naming the step, the host and why; nothing is written', async () => {
    const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
    const playbook = join(work, 'mtu.yaml');
    writeFileSync(playbook, shipped.replace(/^ {2}- links$/m, '  - links: { mtu: 2044 }'));
    const out = join(work, 'refused');
    const result = await run('export', 'ansible', '--hosts', 'all', '--out', out, '--playbook', playbook);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^ibfleet: export ansible: playbook dual-ib-routing: step links asks cpuserver16 for mtu 2044 \(.*\): which NICs get it, .* deploy decides from each host's probe, which an exported project does not have; deploy it with ibfleet deploy/m,
    );
    expect(existsSync(out)).toBe(false);
  });
});
