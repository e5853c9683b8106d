/**
 * What the links step writes, read by the real tools offline — the part the lab cannot activate:
 * its NICs are veths, so NetworkManager activates only Ethernet profiles there, and networkd has no
 * IPoIB to set a mode on. Here NetworkManager 1.42's `nmcli --offline` renders the keyfile of an
 * `infiniband` profile (transport mode, MTU, a P_Key child) from the exact command deploy runs, and
 * changes it with the exact `modify` deploy and rollback run; netplan 0.106's `netplan generate
 * --root-dir` turns ibfleet's file into systemd-networkd's configuration (`[IPoIB] Mode=`), together
 * with the host's own file and the persist step's; ifupdown's `ifquery` reads the stanzas. Every
 * script a change sends with links in it passes shellcheck.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import type { Host } from '../../src/inventory/model.js';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { planRestore } from '../../src/plan/restore.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { routesDataFor } from '../../src/render/host-files.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import { LINKS_NETPLAN_PATH, type ManagedNic } from '../../src/steps/links/decide.js';
import { profileName, profileUuid } from '../../src/steps/links/own-profile.js';
import { renderLinksStanzas } from '../../src/steps/links/ifupdown.js';
import { renderLinksNetplan } from '../../src/steps/links/netplan.js';
import { addCommand, modifyCommand, profileEdits, restoreWords } from '../../src/steps/links/networkmanager.js';
import { parseNmLinks } from '../../src/steps/links/facts.js';
import { renderNetplanFile } from '../../src/steps/persist/native-netplan.js';
import { HOST_OVERRIDES } from '../../src/steps/registry.js';
import { renderIbvDevinfoStandIn } from '../../src/lab/ibv-devinfo-standin.js';
import { netplanGenerate, expectShellcheckClean } from '../helpers/tools.js';

const has = (tool: string, ...args: string[]) =>
  spawnSync(tool, args.length ? args : ['--version'], { encoding: 'utf8' }).status === 0;
const work = mkdtempSync(join(tmpdir(), 'ibfleet-links-tools-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  60: { name: node60, address: a60, manager: netplan }\n  61: { name: node61, address: a61, manager: networkmanager, interfaces: [ib0.8002, ib1.8002] }\n  62: { name: node62, address: a62, manager: ifupdown }\n',
  'lab.yaml',
  undefined,
  HOST_OVERRIDES,
);
const host = (id: number): Host => fleet.hosts.find((h) => h.id === id)!;

/** A NIC as links configures it: IPoIB (the kernel's type 32), with what the playbook asks. */
function managed(h: Host, index: number, want: ManagedNic['want'], ipoib = true): ManagedNic {
  const nic = h.nics[index]!;
  return {
    nic,
    want,
    ipoib,
    addressElsewhere: false,
    profile: { uuid: profileUuid(h, nic.iface), name: profileName(nic.iface), existing: undefined, own: true },
  };
}

/** Runs a command deploy would run, offline: `nmcli --offline …` prints the keyfile it would write. */
function nmcliOffline(command: string, keyfile?: string): { status: number | null; out: string } {
  // The shell splits the command as the host's shell will (an empty quoted word stays a word).
  const words = spawnSync('sh', ['-c', `for w in ${command.replace(/^nmcli /, '')}; do printf '%s\\0' "$w"; done`], {
    encoding: 'utf8',
  })
    .stdout.split('\0')
    .slice(0, -1);
  const result = spawnSync('nmcli', ['--offline', ...words], { encoding: 'utf8', input: keyfile ?? '' });
  return { status: result.status, out: `${result.stdout}${result.stderr}` };
}

describe.skipIf(!has('nmcli', '--offline', 'connection', 'add', 'type', 'dummy', 'ifname', 'x', 'con-name', 'x'))(
  'nmcli --offline renders what deploy tells NetworkManager',
  () => {
    it('an infiniband profile for a P_Key child: connected mode, MTU 65520, parent and full-member P_Key', () => {
      const m = managed(host(61), 0, { mode: 'connected', mtu: 65520, pkey: '0x8002' });
      const command = addCommand(m);
      expect(command).toBe(
        `nmcli connection add type infiniband con-name ibfleet-ib0.8002 ifname ib0.8002 connection.uuid ${profileUuid(host(61), 'ib0.8002')} connection.autoconnect yes ipv4.method manual ipv4.addresses 172.16.61.1/16 ipv6.method ignore infiniband.mtu 65520 infiniband.transport-mode connected infiniband.parent ib0 infiniband.p-key 0x8002`,
      );
      const { status, out } = nmcliOffline(command);
      expect(status, out).toBe(0);
      expect(out).toContain(
        `[connection]\nid=ibfleet-ib0.8002\nuuid=${profileUuid(host(61), 'ib0.8002')}\ntype=infiniband\ninterface-name=ib0.8002\n`,
      );
      expect(out).toContain('[infiniband]\nmtu=65520\np-key=32770\nparent=ib0\ntransport-mode=connected\n');
      expect(out).toContain('[ipv4]\naddress1=172.16.61.1/16\nmethod=manual\n');
      writeFileSync(join(work, 'infiniband-pkey.nmconnection'), out);
    });

    it("an ethernet profile for a RoCE NIC (and the lab's veths), MTU in 802-3-ethernet", () => {
      const { status, out } = nmcliOffline(addCommand(managed(host(62), 1, { mtu: 4200 }, false)));
      expect(status, out).toBe(0);
      expect(out).toMatch(/type=ethernet\ninterface-name=ib1\n/);
      expect(out).toContain('[ethernet]\nmtu=4200\n');
    });

    it("an existing profile changed only where it lacks what is asked, and back with rollback's words", () => {
      const dhcp = nmcliOffline('nmcli connection add type infiniband con-name ib0 ifname ib0 ipv4.method auto');
      expect(dhcp.status, dhcp.out).toBe(0);
      const m = managed(host(60), 0, { mode: 'datagram', mtu: 2044 });
      const found = parseNmLinks([
        'connection.uuid:x',
        'connection.id:ib0',
        'connection.type:infiniband',
        'connection.interface-name:ib0',
        'ipv4.method:auto',
        'ipv4.addresses:',
        'infiniband.mtu:auto',
        'infiniband.transport-mode:datagram',
      ])[0]!;
      const edits = profileEdits(m, found);
      expect(edits).toEqual(['ipv4.method', 'manual', '+ipv4.addresses', '172.16.60.1/16', 'infiniband.mtu', '2044']);
      // Offline, nmcli modifies the keyfile on its stdin: the command deploy runs, without the uuid that names the profile.
      const changed = nmcliOffline(modifyCommand('x', edits).replace(' uuid x', ''), dhcp.out);
      expect(changed.status, changed.out).toBe(0);
      const modified = changed.out;
      expect(modified).toContain('[ipv4]\naddress1=172.16.60.1/16\nmethod=manual\n');
      expect(modified).toContain('mtu=2044');
      const back = nmcliOffline(
        modifyCommand(
          'x',
          restoreWords({ ipoib: true }, { method: 'auto', addresses: [], mtu: 'auto', transportMode: 'datagram' }),
        ).replace(' uuid x', ''),
        modified,
      );
      expect(back.status, back.out).toBe(0);
      expect(back.out).toContain('method=auto');
      expect(back.out).not.toContain('address1=');
      expect(back.out).not.toMatch(/^mtu=/m);
    });
  },
);

describe.skipIf(!has('netplan', 'info'))(
  "netplan generate takes ibfleet's links file and renders what networkd needs",
  () => {
    const generate = (files: Record<string, string>) => netplanGenerate(work, files);
    const name = LINKS_NETPLAN_PATH.slice(LINKS_NETPLAN_PATH.lastIndexOf('/') + 1);

    it('IPoIB in connected mode with MTU 65520: networkd gets the address, [IPoIB] Mode=connected and the MTU', () => {
      const h = host(60);
      const links = renderLinksNetplan(h, 'dual-ib-routing', [
        managed(h, 0, { mode: 'connected', mtu: 65520 }),
        managed(h, 1, {}),
      ]);
      const { status, stderr, network } = generate({ [name]: links });
      expect(status, stderr).toBe(0);
      expect(network['10-netplan-ib0.network']).toContain('[Match]\nName=ib0\n');
      expect(network['10-netplan-ib0.network']).toContain('MTUBytes=65520');
      expect(network['10-netplan-ib0.network']).toContain('Address=172.16.60.1/16');
      expect(network['10-netplan-ib0.network']).toContain('[IPoIB]\nMode=connected');
      expect(network['10-netplan-ib1.network']).toContain('Address=172.16.60.2/16');
      expect(network['10-netplan-ib1.network']).not.toContain('[IPoIB]');
    });

    it("merged with the host's own file (the management NIC) and the persist step's routing file (native persistence)", () => {
      const h = host(60);
      const own =
        'network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    mgmt0:\n      addresses: [198.18.226.60/24]\n';
      const links = renderLinksNetplan(h, 'dual-ib-routing-native', [managed(h, 0, {}), managed(h, 1, {})]);
      const routing = renderNetplanFile(h, fleet, 'dual-ib-routing-native', [
        { iface: 'ib0', type: 'ethernets', id: 'ib0' },
        { iface: 'ib1', type: 'ethernets', id: 'ib1' },
      ]);
      const { status, stderr, network } = generate({
        '99-netcfg.yaml': own,
        [name]: links,
        '60-ibfleet.yaml': routing,
      });
      expect(status, stderr).toBe(0);
      expect(network['10-netplan-ib0.network']).toContain('Address=172.16.60.1/16');
      expect(network['10-netplan-ib0.network']).toContain(
        '[RoutingPolicyRule]\nFrom=172.16.60.1\nTable=941\nPriority=941',
      );
    });

    it("a NIC whose address another netplan file gives gets only what is asked besides from ibfleet's", () => {
      const h = host(60);
      const own =
        'network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    ib0:\n      addresses: [172.16.60.1/16]\n';
      const links = renderLinksNetplan(h, 'dual-ib-routing', [
        { ...managed(h, 0, { mtu: 2044 }), addressElsewhere: true },
      ]);
      expect(links).not.toContain('addresses');
      const { status, stderr, network } = generate({ '01-ib.yaml': own, [name]: links });
      expect(status, stderr).toBe(0);
      expect(network['10-netplan-ib0.network']!.match(/Address=172\.16\.60\.1\/16/g)).toHaveLength(1);
      expect(network['10-netplan-ib0.network']).toContain('MTUBytes=2044');
    });
  },
);

describe.skipIf(!has('ifquery', '--version'))("ifupdown's ifquery reads ibfleet's stanzas as ifup will", () => {
  it('the address, MTU and the P_Key child made from its parent', () => {
    const h = { ...host(62), nics: host(62).nics.map((n) => ({ ...n, iface: `${n.iface}.8002` })) };
    const dir = mkdtempSync(join(work, 'ifupdown-'));
    mkdirSync(join(dir, 'interfaces.d'));
    writeFileSync(
      join(dir, 'interfaces.d', 'ibfleet-links'),
      renderLinksStanzas(h, 'dual-ib-routing', [managed(h, 0, { pkey: '0x8002', mtu: 2044, mode: 'datagram' })]),
    );
    writeFileSync(join(dir, 'interfaces'), `source ${dir}/interfaces.d/*\nauto lo\niface lo inet loopback\n`);
    const result = spawnSync('ifquery', ['-i', join(dir, 'interfaces'), 'ib0.8002'], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n')).toEqual(
      expect.arrayContaining([
        'address: 172.16.62.1',
        'netmask: 255.255.0.0',
        'mtu: 2044',
        'pre-up: ip link set ib0 up',
        'pre-up: [ -d /sys/class/net/ib0.8002 ] || echo 0x8002 > /sys/class/net/ib0/create_child',
        'pre-up: echo datagram > /sys/class/net/ib0.8002/mode',
        'post-down: [ ! -d /sys/class/net/ib0.8002 ] || echo 0x8002 > /sys/class/net/ib0/delete_child',
      ]),
    );
  });
});

describe('every script a change sends with links in it passes shellcheck', () => {
  const fixture = (name: string) =>
    readProbe(readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8'));
  const lab = loadInventory(
    'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  60: { name: node60, address: a60, manager: netplan }\n  61: { name: node61, address: a61, manager: networkmanager }\n  62: { name: node62, address: a62, manager: ifupdown }\n',
    'lab.yaml',
    undefined,
    HOST_OVERRIDES,
  );
  const labHost = (id: number) => lab.hosts.find((h) => h.id === id)!;
  const hook = loadPlaybook(
    readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8'),
    'dual-ib-routing.yaml',
  );
  const native = loadPlaybook(
    readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
    'dual-ib-routing-native.yaml',
  );
  const roce = loadPlaybook(
    'name: roce\nsteps:\n  - links: { roceMode: v2 }\n  - policy-routing\n  - persist\n',
    'roce.yaml',
  );
  const cases: [string, () => string][] = [];
  for (const [id, name] of [
    [60, 'netplan'],
    [61, 'nm'],
    [62, 'ifupdown'],
  ] as const) {
    for (const [label, playbook] of [
      ['hook', hook],
      ['native', native],
    ] as const) {
      cases.push([
        `${name} apply, ${label}`,
        () =>
          renderApplyScript(
            labHost(id),
            lab,
            planDeploy(labHost(id), lab, playbook, fixture(`fresh-${name}.txt`)),
            'run-1',
          ),
      ]);
    }
    cases.push([
      `${name} rollback`,
      () =>
        renderRollbackScript(
          labHost(id),
          lab,
          rollbackLines(labHost(id), lab, fixture(`fresh-${name}-deployed.txt`)),
          'run-1',
        ),
    ]);
    cases.push([
      `${name} restore`,
      () => {
        const before = fixture(`fresh-${name}.txt`);
        const plan = planDeploy(labHost(id), lab, hook, before);
        return renderRestoreScript(
          labHost(id),
          lab,
          planRestore(labHost(id), lab, before, plan.write, '', plan.parts),
          'run-1',
        );
      },
    ]);
  }
  cases.push(["the lab's ibv_devinfo stand-in", () => renderIbvDevinfoStandIn()]);

  it('roceMode reaches the routing program as data (its set_roce_mode is shellchecked with the program)', () => {
    expect(routesDataFor(roce, labHost(60), lab)).toContain('\nroce-mode v2\n');
  });

  it.each(cases)('%s', (name, render) => {
    const path = join(work, `${name.replace(/\W+/g, '-')}.sh`);
    writeFileSync(path, render());
    expectShellcheckClean(path);
  });
});
