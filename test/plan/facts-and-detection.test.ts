import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { factOf, osName } from '../../src/facts/host-facts.js';
import { parseRule } from '../../src/facts/ip-facts.js';
import { netplanClaims } from '../../src/facts/netplan-claims.js';
import { PROBE_VERSION } from '../../src/facts/probe-format.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { detectManager, netplanNameMatches } from '../../src/plan/detect-manager.js';
import { missingPrerequisite } from '../../src/plan/host-plan.js';
import { sentShell } from '../../src/script/sent-shell.js';
import { SYSCTL_FACT } from '../../src/steps/fabric-sysctl/facts.js';
import { loadFixturePlaybook } from '../fixtures/fixtures.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  34: { name: memserver34, address: 198.18.0.34 }\n  16: { name: cpuserver16, address: 198.18.0.16, interfaces: [ibs5f0, ibs5f1] }\n',
  'test.yaml',
);
const host34 = fleet.hosts.find((h) => h.id === 34)!;
const host16 = fleet.hosts.find((h) => h.id === 16)!;

/** A probe transcript with only the given sections (and the end marker). */
function probe(sections: Record<string, string>): string {
  return [...Object.entries(sections).flatMap(([k, v]) => [`@@ibfleet ${k}`, v]), '@@ibfleet end'].join('\n');
}

/** The same, with the managers' configuration as the probe prints it: netplan files' lines behind `|`, one `config` grep for the rest. */
function managerProbe(sections: Record<string, string>): string {
  const { netplan, 'nm-connections': nm, ifupdown, ...rest } = sections;
  const config = [nm, ifupdown].filter((v) => v !== undefined).join('\n');
  const printed = netplan
    ?.split('\n')
    .map((l) => (l.startsWith('#file ') ? l : `|${l}`))
    .join('\n');
  return probe({ ...rest, ...(printed !== undefined ? { netplan: printed } : {}), ...(config ? { config } : {}) });
}

describe('parsing probe output', () => {
  it('reads a real probe of a freshly booted netplan host', () => {
    const facts = parseProbe(fixture('netplan-boot.txt'));
    expect(facts.complete).toBe(true);
    expect(facts.uid).toBe(0);
    expect(osName(facts)).toBe('Ubuntu 18.04.6 LTS');
    expect(facts.addresses.filter((a) => a.iface.startsWith('ib'))).toEqual([
      { iface: 'ib0', address: '172.16.34.1', prefixLength: 16 },
      { iface: 'ib1', address: '172.16.34.2', prefixLength: 16 },
    ]);
    expect(facts.links.get('ib1')).toEqual({
      up: true,
      lowerUp: true,
      mtu: 1500,
      hwaddr: expect.stringMatching(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/),
    });
    expect(
      facts.routes
        .get('main')!
        .filter((r) => r.dst === '172.16.0.0/16')
        .map((r) => r.dev),
    ).toEqual(['ib0', 'ib1']);
    expect(facts.routes.get('941') ?? []).toEqual([]);
    expect(facts.files.get('/etc/ibfleet/ibfleet-routes')).toBeUndefined();
    expect(facts.dirs.has('/etc/networkd-dispatcher/routable.d')).toBe(true);
    expect(facts.tools.has('flock')).toBe(true);
  });

  it('reads a real probe of a deployed host: rules, tables, route get, files', () => {
    const facts = parseProbe(fixture('netplan-deployed.txt'));
    expect(
      facts.rules.filter((r) => r.table === '941' || r.table === '942').map((r) => [r.priority, r.from, r.table]),
    ).toEqual([
      [941, '172.16.34.1', '941'],
      [942, '172.16.34.2', '942'],
    ]);
    expect(facts.routes.get('942')![0]).toMatchObject({
      dst: '172.16.0.0/16',
      dev: 'ib1',
      src: '172.16.34.2',
      proto: 'kernel',
    });
    expect(facts.routeGet.get('ib1')).toMatchObject({ dev: 'ib1', table: '942' });
    expect(factOf(facts, SYSCTL_FACT).get('ib0')).toEqual({
      arp_ignore: '2',
      arp_announce: '2',
      rp_filter: '2',
      accept_local: '1',
    });
    expect(facts.files.get('/etc/ibfleet/ibfleet-routes')).toMatchObject({ mode: 0o755, uid: 0 });
  });

  it("two deployed hosts' probes read alike: one ip -batch, one stat and sha256sum", () => {
    const batched = parseProbe(fixture('netplan-deployed-batched.txt'));
    const classic = parseProbe(fixture('netplan-deployed.txt'));
    expect(batched.complete).toBe(true);
    expect(osName(batched)).toBe('Ubuntu 18.04.6 LTS');
    for (const facts of [batched, classic]) {
      expect(
        facts.rules.filter((r) => r.table === '941' || r.table === '942').map((r) => `${r.priority}: ${r.text}`),
      ).toEqual(['941: from 172.16.34.1 lookup 941', '942: from 172.16.34.2 lookup 942']);
      expect(facts.routes.get('941')!.map((r) => r.text)).toEqual([
        '172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
      ]);
      expect(facts.routes.get('942')!.map((r) => r.text)).toEqual([
        '172.16.0.0/16 dev ib1 proto kernel scope link src 172.16.34.2',
      ]);
      expect(facts.routes.get('main')!.some((r) => r.dst === '172.16.0.0/16')).toBe(false);
      expect(facts.routeGet.get('ib0')).toEqual({
        dev: 'ib0',
        table: '941',
        text: '172.16.1.1 from 172.16.34.1 dev ib0 table 941 uid 0 cache',
      });
      expect(facts.routeGet.get('ib1')).toMatchObject({ dev: 'ib1', table: '942' });
      expect(factOf(facts, SYSCTL_FACT).get('ib1')).toEqual({
        arp_ignore: '2',
        arp_announce: '2',
        rp_filter: '2',
        accept_local: '1',
      });
      expect(facts.files.get('/etc/ibfleet/ibfleet-routes')).toMatchObject({ mode: 0o755, uid: 0 });
      expect(facts.files.get('/etc/sysctl.d/60-ibfleet-fabric.conf')).toMatchObject({ mode: 0o644, uid: 0 });
      expect(facts.files.get('/etc/network/if-up.d/ibfleet-routes')).toBeUndefined();
      expect(facts.links.get('ib1')).toEqual({
        up: true,
        lowerUp: true,
        mtu: 1500,
        hwaddr: expect.stringMatching(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/),
      });
      expect(facts.addresses.filter((a) => a.iface.startsWith('ib')).map((a) => a.address)).toEqual([
        '172.16.34.1',
        '172.16.34.2',
      ]);
      expect(facts.tools.has('sha256sum')).toBe(true);
    }
    // The kernel's local table is not kept: nothing reads it.
    expect(batched.routes.has('local')).toBe(false);
  });

  it('keeps the reason a batched route get failed, from its retry on its own', () => {
    const facts = parseProbe(
      probe({
        ip: '3: ib0    inet 172.16.34.1/16 scope global ib0\\       valid_lft forever preferred_lft forever',
        'route-get-from': 'ib0 172.16.1.1 172.16.34.1\nib1 172.16.1.2 172.16.34.2',
        'route-get ib1': 'RTNETLINK answers: Network is unreachable',
      }),
    );
    expect(facts.routeGet.get('ib0')).toBeUndefined();
    expect(facts.routeGet.get('ib1')).toEqual({
      dev: undefined,
      table: undefined,
      text: 'RTNETLINK answers: Network is unreachable',
    });
  });

  it("sorts the one grep over every manager's configuration by the file each line comes from", () => {
    const facts = parseProbe(
      probe({
        config: [
          '/etc/NetworkManager/system-connections/ib0.nmconnection:interface-name=ib0',
          '/etc/sysconfig/network-scripts/ifcfg-ib1:DEVICE=ib1',
          '/etc/network/interfaces:auto ib0 ib1',
          '/etc/network/interfaces.d/fabric:iface ib1 inet static',
          // A keyfile line that merely starts with "auto" is not an ifupdown stanza.
          '/etc/NetworkManager/system-connections/x.nmconnection:autoconnect=true',
        ].join('\n'),
      }),
    );
    expect(facts.nmConnections).toEqual([
      { file: '/etc/NetworkManager/system-connections/ib0.nmconnection', iface: 'ib0' },
    ]);
    expect(facts.ifcfg).toEqual([{ file: '/etc/sysconfig/network-scripts/ifcfg-ib1', iface: 'ib1' }]);
    expect(facts.ifupdown.map((c) => `${c.keyword} ${c.iface}`)).toEqual(['auto ib0', 'auto ib1', 'iface ib1']);
  });

  it.each([
    ['awk', 'awk'],
    ['the shell where awk fails', 'false'],
  ])("a file the probe prints cannot pass its lines off as the probe's own (section marks, #file): %s", (_, awk) => {
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-probe-'));
    try {
      const hostile =
        'network:\n  ethernets:\n@@ibfleet end\n#file /etc/netplan/evil.yaml\n    ib0: {}\n  renderer: networkd';
      writeFileSync(join(dir, 'x.yaml'), hostile);
      writeFileSync(join(dir, 'os-release'), 'NAME="Ubuntu"\n@@ibfleet uid\nPRETTY_NAME="Ubuntu 18.04.6 LTS"\n');
      // The probe's own readers (host/sent/probe.sh): queued, then printed by one awk, or by the shell.
      const readers = sentShell('probe').replace('\tawk "$rd_awk"', `\t${awk} "$rd_awk"`);
      const script = `${readers}s probe ${PROBE_VERSION}\ns uid\necho 0\nrd_whole os "$1/os-release"\nrd_mark netplan\nfor f in "$1"/*.yaml; do rd_later G '#file' "$f"; done\nrd_flush\ns end`;
      const output = execFileSync('sh', ['-c', script, 'sh', dir], { encoding: 'utf8' });
      const facts = parseProbe(output);
      expect(facts.complete).toBe(true);
      expect(facts.uid).toBe(0);
      expect(osName(facts)).toBe('Ubuntu 18.04.6 LTS');
      expect(facts.netplan).toEqual([{ file: join(dir, 'x.yaml'), text: `${hostile}\n` }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('marks output without the end marker as incomplete', () => {
    expect(parseProbe('@@ibfleet probe 3\n@@ibfleet uid\n0\n').complete).toBe(false);
  });

  it.each([
    ['0:\tfrom all lookup local', { priority: 0, from: 'all', table: 'local' }],
    ['32765:  from 172.16.34.1 lookup 941 ', { priority: 32765, from: '172.16.34.1', table: '941' }],
    ['100:\tfrom all fwmark 0x1 lookup 942 proto static', { priority: 100, from: 'all', table: '942' }],
  ])('parses rule %j', (line, expected) => {
    expect(parseRule(line)).toMatchObject(expected);
  });
});

describe('telling the network manager apart', () => {
  const netplanFile = (renderer: string, ifaces: string[]) =>
    `#file /etc/netplan/99-netcfg.yaml\nnetwork:\n  version: 2\n  renderer: ${renderer}\n  ethernets:\n${ifaces.map((i) => `    ${i}: { addresses: [172.16.34.1/16] }`).join('\n')}`;

  it.each([
    [
      'netplan with networkd renders the NICs (Ubuntu 18.04 server)',
      host34,
      { netplan: netplanFile('networkd', ['ib0', 'ib1']), runtime: 'dir /run/systemd/netif' },
      'netplan',
    ],
    [
      'netplan handing the NICs to NetworkManager (Ubuntu desktop) is NetworkManager',
      host34,
      {
        netplan: netplanFile('NetworkManager', ['ib0', 'ib1']),
        runtime: 'dir /run/NetworkManager\ndir /run/systemd/netif',
      },
      'networkmanager',
    ],
    [
      'NetworkManager keyfiles for the NICs',
      host16,
      {
        'nm-connections': '/etc/NetworkManager/system-connections/ibs5f0.nmconnection:interface-name=ibs5f0',
        runtime: '',
      },
      'networkmanager',
    ],
    [
      'ifupdown stanzas',
      host34,
      { ifupdown: '/etc/network/interfaces:iface ib0 inet static\n/etc/network/interfaces:auto ib0 ib1', runtime: '' },
      'ifupdown',
    ],
    [
      'no configuration, only one manager running (minimal container)',
      host34,
      { nm: 'general running:1.42.4', runtime: 'dir /run/NetworkManager' },
      'networkmanager',
    ],
    // netplan 0.101 writes /run/NetworkManager/conf.d/netplan.conf whether or not NetworkManager runs.
    [
      "a fresh netplan 0.101 host: /run/NetworkManager is netplan's, NetworkManager does not answer",
      host34,
      { runtime: 'dir /run/NetworkManager\ndir /run/systemd/netif' },
      'netplan',
    ],
    [
      'two configurations, running state decides',
      host34,
      {
        ifupdown: '/etc/network/interfaces:iface ib0 inet static',
        netplan: netplanFile('networkd', ['ib1']),
        runtime: 'ifstate /run/network/ifstate.ib0 ib0',
      },
      'ifupdown',
    ],
    [
      'netplan match by glob',
      host34,
      { netplan: '#file /etc/netplan/a.yaml\nnetwork:\n  ethernets:\n    fabric:\n      match: { name: "ib*" }\n' },
      'netplan',
    ],
    // `ib[!01]` names every ib NIC but these two: the ifupdown stanza is the only configuration of ib0.
    [
      'a netplan glob that excludes the NICs ([!x]) claims none of them',
      host34,
      {
        netplan: '#file /etc/netplan/a.yaml\nnetwork:\n  ethernets:\n    others:\n      match: { name: "ib[!01]" }\n',
        ifupdown: '/etc/network/interfaces:iface ib0 inet static',
        runtime: '',
      },
      'ifupdown',
    ],
  ])('%s', (_, host, sections, expected) => {
    const detection = detectManager(host, parseProbe(managerProbe(sections)));
    expect(detection).toMatchObject({ ok: true, manager: expected });
  });

  // What systemd-networkd's Name= and NetworkManager's interface-name do with the glob: fnmatch(3).
  it.each([
    ['ib*', 'ib0', true],
    ['ib*', 'ibs5f0', true],
    ['ib*', 'eth0', false],
    ['ib?', 'ib1', true],
    ['ib?', 'ib10', false],
    ['ib[!0]', 'ib1', true],
    ['ib[!0]', 'ib0', false],
    ['ib[!0]', 'ib10', false],
    ['ib[^0]', 'ib1', true],
    ['ib[01]', 'ib1', true],
    ['ib[01]', 'ib2', false],
    ['ib[0-9]', 'ib7', true],
    ['ib[0-9]', 'iba', false],
    ['ib[[:digit:]]', 'ib3', true],
    ['ib[[:digit:]]', 'ibx', false],
    ['[[:alpha:]]*[[:digit:]]', 'ibs5f1', true],
    ['ib\\*', 'ib*', true],
    ['ib\\*', 'ib0', false],
    ['ib0', 'ib0', true],
    ['ib0', 'ib00', false],
    ['ib.1', 'ib.1', true],
    ['ib.1', 'ibx1', false],
    // No braces, extglobs or leading-! negation in fnmatch: those characters stand for themselves.
    ['ib{0,1}', 'ib0', false],
    ['!ib0', 'ib1', false],
    ['+(ib0)', 'ib0', false],
    ['(ib0|ib1)', 'ib0', false],
  ])('netplan name glob %s against %s: %s', (pattern, name, expected) => {
    expect(netplanNameMatches(pattern, name)).toBe(expected);
  });

  it.each([
    ['nothing configures the NICs and nothing runs', {}, /nothing configures ib0\/ib1/],
    [
      'nothing configures the NICs and both NetworkManager and networkd run',
      { nm: 'general running:1.42.4', runtime: 'dir /run/NetworkManager\ndir /run/systemd/netif' },
      /several managers run \(networkmanager, netplan\)/,
    ],
    [
      'two managers claim the NICs and neither is seen running',
      {
        ifupdown: '/etc/network/interfaces:iface ib0 inet static',
        'nm-connections': '/etc/NetworkManager/system-connections/ib1.nmconnection:interface-name=ib1',
      },
      /networkmanager and ifupdown both configure|ifupdown and networkmanager both configure/,
    ],
  ])('refuses to guess when %s, and asks for manager:', (_, sections, pattern) => {
    const detection = detectManager(host34, parseProbe(managerProbe(sections)));
    expect(detection.ok).toBe(false);
    if (!detection.ok) {
      expect(detection.message).toMatch(pattern);
      expect(detection.message).toMatch(/set manager: .* for host 34 in the inventory/);
    }
  });

  it('files that differ only in their addresses claim the same, and a different renderer is not mixed up with them', () => {
    const text = (address: string, renderer: string) =>
      `network:\n  version: 2\n  renderer: ${renderer}\n  ethernets:\n    ib0:\n      addresses: [${address}/16]\n`;
    expect(netplanClaims([{ file: '/etc/netplan/a.yaml', text: text('172.16.7.1', 'networkd') }])).toEqual([
      { file: '/etc/netplan/a.yaml', iface: 'ib0', renderer: 'networkd', type: 'ethernets', id: 'ib0' },
    ]);
    expect(netplanClaims([{ file: '/etc/netplan/b.yaml', text: text('172.16.8.1', 'networkd') }])).toEqual([
      { file: '/etc/netplan/b.yaml', iface: 'ib0', renderer: 'networkd', type: 'ethernets', id: 'ib0' },
    ]);
    expect(netplanClaims([{ file: '/etc/netplan/c.yaml', text: text('172.16.9.1', 'NetworkManager') }])).toEqual([
      { file: '/etc/netplan/c.yaml', iface: 'ib0', renderer: 'NetworkManager', type: 'ethernets', id: 'ib0' },
    ]);
  });

  it('reads renderers per section and per device', () => {
    const claims = netplanClaims([
      {
        file: 'f',
        text: 'network:\n  renderer: networkd\n  ethernets:\n    renderer: NetworkManager\n    ib0: {}\n    ib1: { renderer: networkd }\n',
      },
    ]);
    expect(claims.map((c) => [c.iface, c.renderer])).toEqual([
      ['ib0', 'NetworkManager'],
      ['ib1', 'networkd'],
    ]);
  });

  it('requires networkd-dispatcher for netplan hosts, since nothing else runs routable.d', () => {
    const playbook = loadFixturePlaybook();
    expect(missingPrerequisite(playbook, 'netplan', parseProbe(probe({ runtime: '' })))).toMatch(
      /networkd-dispatcher is not installed/,
    );
    expect(
      missingPrerequisite(playbook, 'netplan', parseProbe(probe({ runtime: 'dir /etc/networkd-dispatcher' }))),
    ).toBeUndefined();
    expect(
      missingPrerequisite(loadFixturePlaybook('routes-only.yaml'), 'netplan', parseProbe(probe({ runtime: '' }))),
    ).toBeUndefined();
  });
});
